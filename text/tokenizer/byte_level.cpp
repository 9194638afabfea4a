#include "text/tokenizer/byte_level.hpp"

#include <array>

#include "base/utf8.hpp"

namespace troupe {
namespace {

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the others
// (controls, space, 0x7F-0xA0, 0xAD) take U+0100 onwards in byte order.
struct alphabet {
  std::array<char32_t, 256> char_of{};
  std::array<int16_t, 324> byte_of{};  // every character of the alphabet is below U+0144

  alphabet() {
    byte_of.fill(-1);
    char32_t next = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      char_of[b] = printable ? char32_t(b) : next++;
      byte_of[char_of[b]] = int16_t(b);
    }
  }
};

const alphabet& the_alphabet() {
  static const alphabet a;
  return a;
}

}  // namespace

char32_t byte_level_char(uint8_t byte) { return the_alphabet().char_of[byte]; }

std::optional<uint8_t> byte_level_byte(char32_t c) {
  const auto& byte_of = the_alphabet().byte_of;
  if (c >= byte_of.size() || byte_of[c] < 0) return std::nullopt;
  return uint8_t(byte_of[c]);
}

std::optional<std::string> byte_level_decode(std::string_view token) {
  std::string bytes;
  bytes.reserve(token.size());
  for (size_t at = 0; at < token.size();) {
    const auto b = byte_level_byte(next_code_point(token, at));
    if (!b) return std::nullopt;
    bytes += char(*b);
  }
  return bytes;
}

}  // namespace troupe
