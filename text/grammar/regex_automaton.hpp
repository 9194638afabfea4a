#pragma once
// A pattern's language as a byte_automaton over UTF-8: a Thompson automaton of the parsed
// pattern, made deterministic by subset construction. JSON Schema's patterns are not
// anchored: "abc" matches any string containing abc, so the pattern is searched for, with
// any characters before and after it unless ^ or $ pins it. Work is bounded: a pattern
// whose automaton passes the state limits (a huge {m,n}, or a search the subset
// construction blows up on, like .*a.{20}) is an error, never a long compile.
#include <string_view>

#include "base/result.hpp"
#include "text/grammar/byte_automaton.hpp"
#include "text/grammar/regex_syntax.hpp"

namespace troupe {

// The strings (as UTF-8) the pattern matches somewhere, trimmed; an error names the
// construct that cannot be compiled or the limit passed.
result<byte_automaton> regex_automaton(std::string_view pattern);
// The strings the tree matches as a whole (as if between ^ and $).
result<byte_automaton> whole_match_automaton(const regex_node& tree);

// The byte sequences of the UTF-8 encodings of the code points in `ranges` (normalized),
// each a list of inclusive byte ranges, one per byte.
std::vector<std::vector<std::pair<uint8_t, uint8_t>>> utf8_sequences(const code_point_ranges& ranges);

}  // namespace troupe
