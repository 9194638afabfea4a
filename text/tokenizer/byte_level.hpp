#pragma once
// GPT-2's byte-level alphabet, as Hugging Face's ByteLevel pre-tokenizer and decoder use
// it: each of the 256 bytes is shown as one printable character, so that a BPE vocabulary
// of such characters covers any byte string.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace troupe {

char32_t byte_level_char(uint8_t byte);

// The byte a character of the alphabet stands for; nullopt for other characters.
std::optional<uint8_t> byte_level_byte(char32_t c);

// The bytes that `token` (valid UTF-8) stands for; nullopt when a character of it is
// outside the alphabet.
std::optional<std::string> byte_level_decode(std::string_view token);

}  // namespace troupe
