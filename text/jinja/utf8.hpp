#pragma once
// UTF-8 helpers for the Python string semantics templates expect: lengths, indices and
// slices count code points, and whitespace is what str.isspace() accepts.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::jinja::utf8 {

// Decodes the code point at `pos` and advances past it. A byte that does not start a
// valid sequence decodes to itself, so any input round-trips.
char32_t next(std::string_view s, std::size_t& pos);
void append(std::string& out, char32_t cp);

std::size_t length(std::string_view s);
// Byte offset of each code point, plus s.size() at the end.
std::vector<std::size_t> boundaries(std::string_view s);

bool is_space(char32_t cp);

enum class side { left, right, both };
// str.strip / lstrip / rstrip: whitespace when `chars` is null, else any code point of it.
std::string_view strip(std::string_view s, side which, const std::string* chars = nullptr);

}  // namespace troupe::jinja::utf8
