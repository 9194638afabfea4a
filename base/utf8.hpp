#pragma once
// UTF-8 checks, encoding and lossy decoding. Ill-formed input is replaced by U+FFFD one
// "maximal subpart" at a time (Unicode chapter 3), the rule of Rust's from_utf8_lossy and
// of the WHATWG TextDecoder, so decoded text matches Hugging Face tokenizers exactly.
#include <cstddef>
#include <string>
#include <string_view>

namespace troupe {

// The offset of the first byte that is not part of well-formed UTF-8, or npos.
size_t find_invalid_utf8(std::string_view text);

// The code point at text[at], which starts a well-formed character; advances `at` past it.
char32_t next_code_point(std::string_view text, size_t& at);

void append_utf8(char32_t code_point, std::string& out);

// Appends `bytes` to `out` as text, each ill-formed sequence replaced by U+FFFD. Unless
// `final`, a character cut off by the end of `bytes` is left out, as it may still
// complete. Returns how many bytes were consumed.
size_t append_utf8_lossy(std::string_view bytes, std::string& out, bool final);

}  // namespace troupe
