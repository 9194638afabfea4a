#pragma once
// One sequence's constrained decoding where its tokens are sampled: where its output
// stands in the grammar, and which tokens may come next.
#include <cstdint>
#include <memory>
#include <vector>

#include "text/grammar/compiled_grammar.hpp"
#include "text/grammar/grammar_matcher.hpp"
#include "text/grammar/token_vocabulary.hpp"

namespace troupe {

class constrained_output {
 public:
  // end_tokens: the tokens that end the output (eos, stop ids), at least one; never part
  // of its text.
  constrained_output(std::shared_ptr<const compiled_grammar> g, std::vector<int> end_tokens,
                     std::shared_ptr<const token_vocabulary> vocabulary);

  // Follows one generated token; false, and nothing changes, when the grammar refuses it.
  bool advance(int token);

  // The sampler's mask for the next token: what the grammar takes, and the end tokens
  // once the output is a whole sentence. When the vocabulary has no token for what must
  // come next, only the end tokens: the output stops rather than leave the grammar.
  const std::vector<uint64_t>& allowed();

 private:
  grammar_matcher matcher_;
  std::vector<int> end_tokens_;
  std::shared_ptr<const token_vocabulary> vocabulary_;
  std::vector<uint64_t> mask_;
};

}  // namespace troupe
