#include "actors/grammar_warmer.hpp"

#include <chrono>

#include "text/grammar/grammar_matcher.hpp"

namespace troupe {

namespace {

// What a new grammar's repetitions may add to its request's wait: past it, the rest are
// gathered by the first step that meets them.
constexpr std::chrono::milliseconds repetition_budget{500};

}  // namespace

grammar_warmer_actor::behavior_type grammar_warmer(grammar_warmer_actor::pointer,
                                                   std::shared_ptr<grammar_cache> grammars,
                                                   pending_vocabulary vocabulary) {
  return {
      [=](grammar_atom, const grammar& g) {
        auto compiled = grammars->get(g);
        if (!compiled) return false;
        // Waits for the tokenizer's vocabulary, as the first constrained step would.
        if (const auto v = vocabulary.valid() ? vocabulary.get() : nullptr) {
          grammar_matcher matcher(std::move(compiled).value());
          matcher.gather_classes(v->trie, std::chrono::steady_clock::now() + repetition_budget);
        }
        return true;
      },
  };
}

}  // namespace troupe
