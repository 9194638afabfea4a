#include "actors/grammar_warmer.hpp"

#include <chrono>
#include <vector>

#include "text/grammar/grammar_matcher.hpp"

namespace troupe {

namespace {

// What a new grammar's repetitions may add to its request's wait: past it, the rest are
// gathered by the first step that meets them.
constexpr std::chrono::milliseconds repetition_budget{500};

}  // namespace

grammar_warmer_actor::behavior_type grammar_warmer(grammar_warmer_actor::pointer, std::shared_ptr<grammar_cache> grammars,
                                                   pending_vocabulary vocabulary) {
  return {
      [=](grammar_atom, const grammar& g) {
        auto compiled = grammars->get(g);
        if (!compiled) return false;
        // Waits for the tokenizer's vocabulary, as the first constrained step would.
        if (const auto v = vocabulary.valid() ? vocabulary.get() : nullptr) {
          const auto started = std::chrono::steady_clock::now();
          const auto shared = std::move(compiled).value();
          grammar_matcher matcher(shared);
          std::vector<uint64_t> mask;
          matcher.allowed_tokens(v->trie, mask);
          for (const auto& context : shared->repetition_contexts()) {
            if (std::chrono::steady_clock::now() - started > repetition_budget) break;
            matcher.gather_classes(v->trie, context);
          }
        }
        return true;
      },
  };
}

}  // namespace troupe
