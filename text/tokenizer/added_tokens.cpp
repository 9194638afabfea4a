#include "text/tokenizer/added_tokens.hpp"

#include <algorithm>

#include "base/check.hpp"
#include "base/utf8.hpp"
#include "text/tokenizer/json_fields.hpp"
#include "text/tokenizer/regex.hpp"

namespace troupe {
namespace {

using json = nlohmann::json;

// Rust's regex \s, which HF tokenizers strips around lstrip/rstrip tokens: White_Space.
bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Rust's regex \w, which decides single_word tokens.
bool is_word_char(std::string_view one_char) {
  static const regex word = regex::compile("^[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}]", "").value();
  bool found = false;
  const status s = word.for_each_match(one_char, [&](size_t, size_t) { found = true; });
  TROUPE_CHECK(s.ok(), "a one-character match cannot exhaust PCRE2's limits");
  return found;
}

// The last and the first character of a string, as views.
std::string_view last_char(std::string_view s) {
  size_t at = s.size();
  while (at > 0 && (static_cast<unsigned char>(s[--at]) & 0xC0) == 0x80) {
  }
  return s.substr(at);
}
std::string_view first_char(std::string_view s) {
  size_t at = 0;
  if (!s.empty()) next_code_point(s, at);
  return s.substr(0, at);
}

// Where the white space at the end of `s` begins.
size_t trailing_space_begin(std::string_view s) {
  size_t end = s.size();
  while (end > 0) {
    const std::string_view c = last_char(s.substr(0, end));
    size_t at = 0;
    if (!is_white_space(next_code_point(c, at))) break;
    end -= c.size();
  }
  return end;
}

// How long the white space at the start of `s` is.
size_t leading_space_length(std::string_view s) {
  size_t at = 0;
  while (at < s.size()) {
    size_t next = at;
    if (!is_white_space(next_code_point(s, next))) break;
    at = next;
  }
  return at;
}

}  // namespace

added_token_matcher::added_token_matcher(std::vector<added_token> tokens, const std::vector<std::string>& patterns)
    : tokens_(std::move(tokens)), trie_(1) {
  for (size_t t = 0; t < tokens_.size(); ++t) {
    const std::string& p = patterns[t];
    if (p.empty()) continue;
    starts_[static_cast<unsigned char>(p[0])] = true;
    int node = 0;
    for (char ch : p) {
      const auto byte = static_cast<unsigned char>(ch);
      auto& children = trie_[node].children;
      auto it = std::lower_bound(children.begin(), children.end(), std::pair(byte, 0));
      if (it != children.end() && it->first == byte) {
        node = it->second;
        continue;
      }
      const int child = int(trie_.size());
      children.insert(it, {byte, child});
      trie_.emplace_back();  // last: it may move `children`
      node = child;
    }
    if (trie_[node].token < 0) trie_[node].token = int(t);  // the first of duplicates wins
  }
}

std::pair<int, size_t> added_token_matcher::longest_at(std::string_view text, size_t at) const {
  int node = 0;
  std::pair<int, size_t> found{-1, 0};
  for (size_t i = at; i < text.size(); ++i) {
    const auto& children = trie_[node].children;
    const auto byte = static_cast<unsigned char>(text[i]);
    auto it = std::lower_bound(children.begin(), children.end(), std::pair(byte, 0));
    if (it == children.end() || it->first != byte) break;
    node = it->second;
    if (trie_[node].token >= 0) found = {trie_[node].token, i + 1 - at};
  }
  return found;
}

void added_token_matcher::split(std::string_view text, std::vector<text_span>& out) const {
  size_t done = 0;  // text before this offset is in `out`
  size_t at = 0;
  while (at < text.size()) {
    if (!starts_[static_cast<unsigned char>(text[at])]) {
      ++at;
      continue;
    }
    const auto [t, length] = longest_at(text, at);
    if (t < 0) {
      ++at;
      continue;
    }
    size_t begin = at, end = at + length;
    at = end;  // as in HF, the search goes on after a match even when a rule drops it
    const added_token& token = tokens_[t];
    if (token.single_word) {
      const bool word_before = begin > 0 && is_word_char(last_char(text.substr(0, begin)));
      const bool word_after = end < text.size() && is_word_char(first_char(text.substr(end)));
      if (word_before || word_after) continue;
    }
    if (token.lstrip) begin = std::max(trailing_space_begin(text.substr(0, begin)), done);
    if (token.rstrip) end += leading_space_length(text.substr(end));
    if (done < begin) out.push_back({done, begin, -1});
    out.push_back({begin, end, token.id});
    done = end;
  }
  if (done < text.size()) out.push_back({done, text.size(), -1});
}

result<std::vector<added_token>> parse_added_tokens(const json& list, std::string_view source) {
  std::vector<added_token> tokens;
  if (list.is_null()) return tokens;
  const auto bad = [&](const std::string& what) { return error{std::string(source) + ": added_tokens: " + what}; };
  if (!list.is_array()) return bad("must be a list");
  for (const json& entry : list) {
    if (!entry.is_object()) return bad("each entry must be an object");
    const auto id = entry.find("id");
    const auto content = entry.find("content");
    if (id == entry.end() || !id->is_number_integer() || id->get<int64_t>() < 0 || id->get<int64_t>() > INT32_MAX)
      return bad("an entry without a valid \"id\"");
    if (content == entry.end() || !content->is_string() || content->get_ref<const std::string&>().empty())
      return bad("entry " + std::to_string(id->get<int64_t>()) + " has no \"content\"");
    added_token t;
    t.id = id->get<int>();
    t.content = content->get<std::string>();
    t.special = bool_field(entry, "special", false);
    t.single_word = bool_field(entry, "single_word", false);
    t.lstrip = bool_field(entry, "lstrip", false);
    t.rstrip = bool_field(entry, "rstrip", false);
    t.normalized = bool_field(entry, "normalized", !t.special);  // HF's default
    tokens.push_back(std::move(t));
  }
  return tokens;
}

}  // namespace troupe
