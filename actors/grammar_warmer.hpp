#pragma once
// The last stage's helper for constrained sequences (actors.hpp): it compiles a grammar into
// the engine's cache and gathers the token classes of its first mask there, and those of
// the contexts inside its repetitions (strings above all; up to 0.5 s of them), on a
// thread of its own. That takes milliseconds for a new schema (tens of them for a long
// enum or a string), which a step would otherwise spend with every sequence of the batch
// waiting.
#include <memory>

#include "actors/actors.hpp"
#include "text/grammar/grammar_cache.hpp"
#include "text/grammar/token_vocabulary.hpp"

namespace troupe {

grammar_warmer_actor::behavior_type grammar_warmer(grammar_warmer_actor::pointer self,
                                                   std::shared_ptr<grammar_cache> grammars,
                                                   pending_vocabulary vocabulary);

}  // namespace troupe
