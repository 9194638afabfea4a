#pragma once
// A Hugging Face tokenizer.json with a byte-level BPE model (Qwen2, Qwen3, Qwen3.5,
// Llama 3, GPT-2), giving the ids and the text that Hugging Face tokenizers gives. Every
// setting comes from the file; one that cannot be honoured exactly stops the load with an
// error naming the file and the construct. Thread-safe: all methods are const, and the
// pre-token cache has its own lock.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "text/tokenizer/added_tokens.hpp"
#include "text/tokenizer/bpe.hpp"
#include "text/tokenizer/normalizer.hpp"
#include "text/tokenizer/pre_tokenizer.hpp"
#include "text/tokenizer/token_cache.hpp"

namespace troupe {

class tokenizer {
 public:
  static result<tokenizer> load(const std::filesystem::path& tokenizer_json);

  // Parses tokenizer.json text; `source` names the file in error messages.
  static result<tokenizer> parse(std::string_view json_text, std::string_view source);

  // The ids of `text`, with its added tokens (<|im_start|>, <think>, ...) where they
  // appear. Nothing is added around it (no BOS, whatever the post_processor says): the
  // chat template places such tokens. Text that is not UTF-8 is an error.
  result<std::vector<int>> encode(std::string_view text) const;

  // For text from a client that a chat template places among its own special tokens:
  // guard() marks each special token's text in it (after its first character, with the
  // noncharacter U+FDD0, which it doubles where the text has it), so that no special
  // token is found there wherever the template puts it. encode_guarded() then encodes
  // text whose client parts were guarded: special tokens where the template wrote them,
  // the client's special-token text as plain text (HF's split_special_tokens), every
  // mark undone.
  std::string guard(std::string_view client_text) const;
  result<std::vector<int>> encode_guarded(std::string_view text) const;

  // The text of `ids`, as HF's ByteLevel decoder gives it: ill-formed UTF-8 becomes
  // U+FFFD; ids without a token are skipped, and so are special tokens if `skip_special`.
  std::string decode(std::span<const int> ids, bool skip_special = false) const;

  // The bytes that `id` contributes to decoded text: empty where decode skips it.
  std::string_view token_bytes(int id, bool skip_special) const;

  // An added token's content or a vocabulary entry (in byte-level characters) and back.
  std::optional<int> token_to_id(std::string_view token) const;
  std::optional<std::string_view> id_to_token(int id) const;

  bool is_special(int id) const;

  // One past the highest id, of the vocabulary and the added tokens together.
  int vocab_size() const { return int(id_text_.size()); }

 private:
  enum class kind : uint8_t { none, regular, special };

  tokenizer(normalizer n, pre_tokenizer p, bpe m, std::vector<added_token> added);
  result<std::vector<int>> encode(std::string_view text, bool guarded) const;
  status encode_text(std::string_view text, std::vector<int>& ids) const;
  void encode_piece(std::string_view piece, std::vector<int>& ids) const;

  normalizer normalizer_;
  pre_tokenizer pre_tokenizer_;
  bpe model_;
  added_token_matcher raw_tokens_;         // added tokens matched before normalizing
  added_token_matcher normalized_tokens_;  // and those matched after
  string_map added_ids_;                   // content -> id
  std::vector<std::string> id_text_;
  std::vector<std::string> id_bytes_;
  std::vector<kind> id_kind_;
  std::vector<std::string> special_texts_;  // what guard() marks
  bool special_starts_[256] = {};           // whether one of them starts with this byte
  std::unique_ptr<token_cache> cache_;
};

}  // namespace troupe
