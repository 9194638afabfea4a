#pragma once
// JSON Schema's `format`s as the patterns a grammar writes: for each, a regular subset of
// what the format allows (RFC 3339 dates and times with real month lengths and leap
// years, e-mail addresses, UUIDs, http(s) URIs, host names, IPv4 and IPv6 addresses,
// ISO 8601 durations), so that every string written validates, as xgrammar's builtin
// formats do. Each pattern is anchored (matched as a whole).
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "text/grammar/byte_automaton.hpp"

namespace troupe {

// The pattern of a format, or an error naming an unknown one.
result<std::string> format_pattern(std::string_view format);

// The format's strings as an automaton, compiled once per process and shared.
result<byte_automaton> format_automaton(std::string_view format);

}  // namespace troupe
