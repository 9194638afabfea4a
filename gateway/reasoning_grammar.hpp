#pragma once
// The grammar of a chat reply that starts inside a `<think>` block (the prompt opened it,
// as Qwen3.5's template does with thinking on): free reasoning up to the first
// `</think>`, at most two newlines, then an answer in the given grammar. The constraint
// of a structured output then holds the answer, not the reasoning.
#include "text/grammar/grammar.hpp"

namespace troupe {

grammar after_reasoning(const grammar& answer);

}  // namespace troupe
