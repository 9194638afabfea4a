#include "text/tokenizer/pre_tokenizer.hpp"

#include "text/tokenizer/json_fields.hpp"

namespace troupe {
namespace {

using json = nlohmann::json;

// The regex of GPT-2, which ByteLevel splits by when its use_regex is set.
constexpr std::string_view gpt2_pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// A regex matching `literal` exactly.
std::string quote(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}-/#&~ ").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

result<pre_tokenizer> pre_tokenizer::from_json(const json& config, std::string_view source) {
  pre_tokenizer p;
  bool byte_level = false;
  if (auto s = p.add(config, source, byte_level); !s) return s.err();
  if (!byte_level)
    return error{std::string(source) + ": pre_tokenizer has no ByteLevel step: not a byte-level BPE tokenizer"};
  return p;
}

status pre_tokenizer::add(const json& config, std::string_view source, bool& byte_level) {
  const auto bad = [&](const std::string& what) { return error{std::string(source) + ": " + what}; };
  const std::string type = config.is_null() ? "null" : string_field(config, "type");
  if (type == "Sequence") {
    const auto it = config.find("pretokenizers");
    if (it == config.end() || !it->is_array()) return bad("pre_tokenizer Sequence without a \"pretokenizers\" list");
    for (const json& inner : *it)
      if (auto s = add(inner, source, byte_level); !s) return s;
    return ok();
  }
  step st;
  if (type == "ByteLevel") {
    if (byte_level) return bad("pre_tokenizer has two ByteLevel steps");
    byte_level = true;
    st.add_prefix_space = bool_field(config, "add_prefix_space", true);
    if (bool_field(config, "use_regex", true)) {
      auto r = regex::compile(gpt2_pattern, source);
      if (!r) return r.err();
      st.pattern = std::move(*r);
    }
  } else if (type == "Split") {
    const std::string behavior = string_field(config, "behavior");
    if (behavior != "Isolated") return bad("unsupported Split behavior \"" + behavior + "\" (supported: Isolated)");
    if (bool_field(config, "invert", false)) return bad("unsupported Split setting \"invert\": true");
    const auto pattern = config.find("pattern");
    std::string text;
    if (pattern != config.end() && pattern->is_object()) {
      if (const auto re = pattern->find("Regex"); re != pattern->end() && re->is_string())
        text = re->get<std::string>();
      else if (const auto lit = pattern->find("String"); lit != pattern->end() && lit->is_string())
        text = quote(lit->get<std::string>());
    }
    if (text.empty()) return bad("Split without a \"Regex\" or \"String\" pattern");
    auto r = regex::compile(text, source);
    if (!r) return r.err();
    st.pattern = std::move(*r);
  } else {
    return bad("unsupported pre_tokenizer \"" + type + "\" (supported: Split, ByteLevel, Sequence)");
  }
  steps_.push_back(std::move(st));
  return ok();
}

status pre_tokenizer::split(std::string_view text, std::vector<std::string_view>& pieces,
                            std::deque<std::string>& storage) const {
  std::vector<std::string_view> current{text}, next;
  for (const step& st : steps_) {
    next.clear();
    for (std::string_view piece : current) {
      if (st.add_prefix_space && !piece.starts_with(' ')) {
        std::string& prefixed = storage.emplace_back(1, ' ');
        prefixed += piece;
        piece = prefixed;
      }
      if (!st.pattern) {
        next.push_back(piece);
        continue;
      }
      // "Isolated": the matches and the text between them are pieces alike.
      size_t done = 0;
      auto s = st.pattern->for_each_match(piece, [&](size_t begin, size_t end) {
        if (done < begin) next.push_back(piece.substr(done, begin - done));
        next.push_back(piece.substr(begin, end - begin));
        done = end;
      });
      if (!s) return s;
      if (done < piece.size()) next.push_back(piece.substr(done));
    }
    current.swap(next);
  }
  pieces.insert(pieces.end(), current.begin(), current.end());
  return ok();
}

}  // namespace troupe
