#include "actors/grammar_warmer.hpp"

#include <vector>

#include "model/grammar/grammar_matcher.hpp"

namespace troupe {

grammar_warmer_actor::behavior_type grammar_warmer(grammar_warmer_actor::pointer, std::shared_ptr<grammar_cache> grammars,
                                                   pending_vocabulary vocabulary) {
  return {
      [=](grammar_atom, const grammar& g) {
        auto compiled = grammars->get(g);
        if (!compiled) return false;
        // Waits for the tokenizer's vocabulary, as the first constrained step would.
        if (const auto v = vocabulary.valid() ? vocabulary.get() : nullptr) {
          grammar_matcher matcher(std::move(compiled).value());
          std::vector<uint64_t> mask;
          matcher.allowed_tokens(v->trie, mask);
        }
        return true;
      },
  };
}

}  // namespace troupe
