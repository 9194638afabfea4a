#pragma once
// Helpers of the parsers that read generated text as it streams in (stop strings,
// reasoning, tool calls), where a marker may arrive split across pieces.
#include <algorithm>
#include <string_view>

namespace troupe {

// How many trailing bytes of `text` could be the start of `marker`: those must be held
// back until the next piece says whether the marker follows.
inline size_t partial_marker_suffix(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
    if (marker.substr(0, n) == text.substr(text.size() - n)) return n;
  return 0;
}

inline bool is_ascii_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

}  // namespace troupe
