#pragma once
// Bounded repetitions as grammar_builder::repeated writes them: one rule per repetition,
// "item next" (or "item" for the last), with an empty alternative once enough items are
// written. Told apart by position, each step would be a context of its own for the token
// classes (a string of at most 500 characters: 500 walks of the vocabulary); the matcher
// instead walks a long twin run once, counting items, and keeps of that walk the tokens
// each place that calls a step allows by its count (grammar_matcher.cpp).
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "text/grammar/grammar.hpp"

namespace troupe {

inline constexpr int32_t unbounded_items = std::numeric_limits<int32_t>::max();

// A step of a run and the steps after it: their item, how many items they may match
// (unbounded_items for a run that ends in an unbounded repetition) and how many they must.
struct counted_run {
  grammar_symbol item;
  int32_t items = 0;
  int32_t required = 0;
};

// Per rule, the run it starts when it is a step; nullopt elsewhere, and for an unbounded
// repetition past its required items (nothing to count). nullable: per rule, whether it
// matches the empty string (an item must not).
std::vector<std::optional<counted_run>> find_counted_runs(const grammar& g, const std::vector<bool>& nullable);

// The rules that start a repetition of the shape above, bounded or not (a rule whose next
// step is itself): each a step that no other step names as its next.
std::vector<int32_t> repetition_heads(const grammar& g, const std::vector<bool>& nullable);

}  // namespace troupe
