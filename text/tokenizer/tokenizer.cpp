#include "text/tokenizer/tokenizer.hpp"

#include <algorithm>
#include <deque>

#include <nlohmann/json.hpp>

#include "base/read_file.hpp"
#include "base/utf8.hpp"
#include "text/tokenizer/byte_level.hpp"
#include "text/tokenizer/json_fields.hpp"

namespace troupe {
namespace {

using json = nlohmann::json;

// Pre-tokens longer than this are rare and seldom repeat: not worth a cache entry.
constexpr size_t max_cached_piece = 256;
constexpr size_t cache_capacity = 1 << 16;

// The added tokens matched in raw text (`normalized` false) or in normalized text, with
// the text that finds each.
added_token_matcher matcher_for(const std::vector<added_token>& all, bool normalized, const normalizer& n) {
  std::vector<added_token> tokens;
  std::vector<std::string> patterns;
  for (const added_token& t : all) {
    if (t.normalized != normalized) continue;
    std::string storage;
    patterns.emplace_back(normalized ? n.apply(t.content, storage) : t.content);
    tokens.push_back(t);
  }
  return added_token_matcher(std::move(tokens), patterns);
}

// HF tokenizers does not take an added token's id from the file: it gives the token its
// vocabulary id, or the next id after the vocabulary and the added tokens before it. A
// file whose ids differ would be read differently there, so it is refused.
status check_added_ids(const std::vector<added_token>& added, const bpe& model, std::string_view source) {
  int next = int(model.size());
  string_map assigned;
  for (const added_token& t : added) {
    int expected;
    if (const auto it = assigned.find(t.content); it != assigned.end()) {
      expected = it->second;
    } else if (const auto id = model.id_of(t.content)) {
      expected = *id;
    } else {
      expected = next;
    }
    if (t.id != expected)
      return error{std::string(source) + ": added token \"" + t.content + "\" has id " + std::to_string(t.id) +
                   ", but Hugging Face tokenizers gives it id " + std::to_string(expected)};
    assigned.emplace(t.content, t.id);
    next = std::max(next, t.id + 1);
  }
  return ok();
}

}  // namespace

result<tokenizer> tokenizer::load(const std::filesystem::path& tokenizer_json) {
  auto text = read_text_file(tokenizer_json);
  if (!text) return text.err();
  return parse(*text, tokenizer_json.string());
}

result<tokenizer> tokenizer::parse(std::string_view json_text, std::string_view source) {
  const json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return error{std::string(source) + ": not valid JSON"};
  if (!root.is_object()) return error{std::string(source) + ": not a JSON object"};

  const json null;
  const auto field = [&](const char* key) -> const json& {
    const auto it = root.find(key);
    return it == root.end() ? null : *it;
  };
  const json& decoder = field("decoder");
  if (string_field(decoder, "type", decoder.is_null() ? "null" : "") != "ByteLevel")
    return error{std::string(source) + ": unsupported decoder \"" +
                 string_field(decoder, "type", decoder.is_null() ? "null" : "") + "\" (supported: ByteLevel)"};
  auto model = bpe::from_json(field("model"), source);
  if (!model) return model.err();
  auto norm = normalizer::from_json(field("normalizer"), source);
  if (!norm) return norm.err();
  auto pre = pre_tokenizer::from_json(field("pre_tokenizer"), source);
  if (!pre) return pre.err();
  auto added = parse_added_tokens(field("added_tokens"), source);
  if (!added) return added.err();
  if (auto s = check_added_ids(*added, *model, source); !s) return s.err();
  // "post_processor", "truncation" and "padding" shape batches of encodings; like
  // transformers by default, encode() leaves them out.
  return tokenizer(std::move(*norm), std::move(*pre), std::move(*model), std::move(*added));
}

tokenizer::tokenizer(normalizer n, pre_tokenizer p, bpe m, std::vector<added_token> added)
    : normalizer_(std::move(n)),
      pre_tokenizer_(std::move(p)),
      model_(std::move(m)),
      raw_tokens_(matcher_for(added, false, normalizer_)),
      normalized_tokens_(matcher_for(added, true, normalizer_)),
      cache_(std::make_unique<token_cache>(cache_capacity)) {
  id_text_ = model_.tokens();
  for (const added_token& t : added) {
    if (size_t(t.id) >= id_text_.size()) id_text_.resize(size_t(t.id) + 1);
    // HF keeps a normalized token's content normalized (decode shows it so), yet finds
    // its id by the content as written.
    std::string storage;
    id_text_[size_t(t.id)] = t.normalized ? normalizer_.apply(t.content, storage) : t.content;
    added_ids_[t.content] = t.id;
  }
  id_kind_.assign(id_text_.size(), kind::none);
  id_bytes_.resize(id_text_.size());
  for (size_t id = 0; id < id_text_.size(); ++id) {
    if (id_text_[id].empty()) continue;
    id_kind_[id] = kind::regular;
    // HF's ByteLevel decoder: a token with a character outside the alphabet stays as is.
    id_bytes_[id] = byte_level_decode(id_text_[id]).value_or(id_text_[id]);
  }
  for (const added_token& t : added)
    if (t.special) {
      id_kind_[size_t(t.id)] = kind::special;
      special_texts_.push_back(t.content);
      if (!t.content.empty()) special_starts_[static_cast<unsigned char>(t.content[0])] = true;
    }
}

namespace {

constexpr std::string_view guard_mark = "\xEF\xB7\x90";  // U+FDD0, a noncharacter

size_t utf8_length(unsigned char lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

// Undoes guard(): a run of n marks was n / 2 of the client's, and one guard's when odd.
std::string unguard(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, guard_mark.size(), guard_mark) != 0) {
      out.push_back(text[i++]);
      continue;
    }
    size_t run = 0;
    for (; text.compare(i, guard_mark.size(), guard_mark) == 0; i += guard_mark.size()) ++run;
    for (size_t k = 0; k < run / 2; ++k) out += guard_mark;
  }
  return out;
}

}  // namespace

std::string tokenizer::guard(std::string_view client_text) const {
  std::string out;
  out.reserve(client_text.size());
  for (size_t i = 0; i < client_text.size();) {
    if (client_text.compare(i, guard_mark.size(), guard_mark) == 0) {
      out += guard_mark;
      out += guard_mark;
      i += guard_mark.size();
      continue;
    }
    const bool special_here = special_starts_[static_cast<unsigned char>(client_text[i])] &&
                              std::any_of(special_texts_.begin(), special_texts_.end(), [&](const std::string& t) {
                                return client_text.compare(i, t.size(), t) == 0;
                              });
    const size_t take = special_here ? utf8_length(static_cast<unsigned char>(client_text[i])) : 1;
    out.append(client_text.substr(i, take));
    if (special_here) out += guard_mark;
    i += take;
  }
  return out;
}

result<std::vector<int>> tokenizer::encode(std::string_view text) const { return encode(text, false); }

result<std::vector<int>> tokenizer::encode_guarded(std::string_view text) const { return encode(text, true); }

result<std::vector<int>> tokenizer::encode(std::string_view text, bool guarded) const {
  if (const size_t bad = find_invalid_utf8(text); bad != std::string_view::npos) {
    static const char hex[] = "0123456789abcdef";
    const auto b = static_cast<unsigned char>(text[bad]);
    return error{std::string("text is not valid UTF-8: byte 0x") + hex[b >> 4] + hex[b & 15] + " at offset " +
                 std::to_string(bad)};
  }
  std::vector<int> ids;
  ids.reserve(text.size() / 3);
  std::vector<text_span> spans;
  raw_tokens_.split(text, spans);
  std::string normalized_storage;
  std::vector<text_span> inner;
  for (const text_span& span : spans) {
    if (span.id >= 0) {
      ids.push_back(span.id);
      continue;
    }
    const std::string_view normalized =
        normalizer_.apply(text.substr(span.begin, span.end - span.begin), normalized_storage);
    inner.clear();
    normalized_tokens_.split(normalized, inner);
    for (const text_span& s : inner) {
      if (s.id >= 0) {
        ids.push_back(s.id);
        continue;
      }
      const std::string_view plain = normalized.substr(s.begin, s.end - s.begin);
      if (auto st = guarded ? encode_text(unguard(plain), ids) : encode_text(plain, ids); !st) return st.err();
    }
  }
  return ids;
}

status tokenizer::encode_text(std::string_view text, std::vector<int>& ids) const {
  std::vector<std::string_view> pieces;
  std::deque<std::string> storage;
  if (auto s = pre_tokenizer_.split(text, pieces, storage); !s) return s;
  for (std::string_view piece : pieces) encode_piece(piece, ids);
  return ok();
}

void tokenizer::encode_piece(std::string_view piece, std::vector<int>& ids) const {
  const bool cacheable = piece.size() <= max_cached_piece;
  if (cacheable && cache_->find(piece, ids)) return;
  const size_t first = ids.size();
  model_.encode(piece, ids);
  if (cacheable) cache_->insert(piece, ids.data() + first, ids.size() - first);
}

std::string_view tokenizer::token_bytes(int id, bool skip_special) const {
  if (id < 0 || size_t(id) >= id_kind_.size()) return {};
  const kind k = id_kind_[size_t(id)];
  if (k == kind::none || (skip_special && k == kind::special)) return {};
  return id_bytes_[size_t(id)];
}

std::string tokenizer::decode(std::span<const int> ids, bool skip_special) const {
  std::string bytes;
  for (int id : ids) bytes += token_bytes(id, skip_special);
  std::string text;
  text.reserve(bytes.size());
  append_utf8_lossy(bytes, text, /*final=*/true);
  return text;
}

std::optional<int> tokenizer::token_to_id(std::string_view token) const {
  if (const auto it = added_ids_.find(token); it != added_ids_.end()) return it->second;
  return model_.id_of(token);
}

std::optional<std::string_view> tokenizer::id_to_token(int id) const {
  if (id < 0 || size_t(id) >= id_kind_.size() || id_kind_[size_t(id)] == kind::none) return std::nullopt;
  return id_text_[size_t(id)];
}

bool tokenizer::is_special(int id) const {
  return id >= 0 && size_t(id) < id_kind_.size() && id_kind_[size_t(id)] == kind::special;
}

}  // namespace troupe
