#pragma once
// ECMAScript regular expressions as JSON Schema's `pattern` uses them (ECMA-262, read in
// Unicode mode), parsed into a tree over code points. Everything that describes a regular
// language is read: literals and escapes, classes with ranges and \d \w \s, '.', groups,
// alternation, the quantifiers (lazy ones too: the language is the same), anchors.
// Backreferences, lookaround, word boundaries and Unicode property escapes are refused
// with an error naming the construct and its offset.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"

namespace troupe {

// Inclusive code point ranges, sorted and disjoint once normalized.
using code_point_ranges = std::vector<std::pair<uint32_t, uint32_t>>;

struct regex_node {
  enum class kind { characters, sequence, alternation, repetition, line_start, line_end };
  kind type = kind::sequence;
  code_point_ranges characters;       // characters: one code point out of these
  std::vector<regex_node> children;   // sequence, alternation, repetition (one child)
  int min_count = 0, max_count = -1;  // repetition; max_count < 0: no bound
};

// Groups may nest this deep; deeper patterns are refused rather than recursed into.
inline constexpr int max_regex_nesting = 64;

result<regex_node> parse_regex(std::string_view pattern);

// Sorted, merged, and without the surrogates (which UTF-8 cannot carry).
code_point_ranges normalized(code_point_ranges ranges);
// Every code point (but the surrogates) outside `ranges`.
code_point_ranges complement(const code_point_ranges& ranges);

}  // namespace troupe
