#pragma once
// tokenizer.json's "added_tokens" (special tokens such as <|im_start|>, and others such
// as <think>) and how they are found in text, as Hugging Face tokenizers'
// AddedVocabulary finds them: leftmost-longest matches, then the single_word, lstrip and
// rstrip rules. Tokens flagged "normalized" are matched in normalized text, the others
// in the raw text.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"

namespace troupe {

struct added_token {
  int id = 0;
  std::string content;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
};

// A piece of text: an added token when id >= 0, else plain text.
struct text_span {
  size_t begin;
  size_t end;
  int id;
};

// Finds a set of added tokens in text.
class added_token_matcher {
 public:
  // `patterns[i]` is the text that finds `tokens[i]`: its content, normalized when the
  // token is matched in normalized text.
  added_token_matcher(std::vector<added_token> tokens, const std::vector<std::string>& patterns);

  bool empty() const { return tokens_.empty(); }

  // Splits `text` (valid UTF-8) into added tokens and the plain text between them.
  void split(std::string_view text, std::vector<text_span>& out) const;

 private:
  struct trie_node {
    std::vector<std::pair<unsigned char, int>> children;  // sorted by byte
    int token = -1;                                       // index in tokens_
  };

  // The longest token starting at text[at]: its index (or -1) and length.
  std::pair<int, size_t> longest_at(std::string_view text, size_t at) const;

  std::vector<added_token> tokens_;
  std::vector<trie_node> trie_;
  bool starts_[256] = {};  // whether some token starts with this byte
};

// Reads "added_tokens"; `source` names the file in error messages.
result<std::vector<added_token>> parse_added_tokens(const nlohmann::json& list, std::string_view source);

}  // namespace troupe
