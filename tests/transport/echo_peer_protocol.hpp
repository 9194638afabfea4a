#pragma once
// What ucx_echo_peer and the processes that start it share: worker addresses travel as hex
// lines, the child's on its standard output first (after address_prefix: UCX may log to
// standard output too), then its parent's on its standard input; a message under
// echo_quit_tag ends the child.
#include <cstdint>
#include <string>
#include <vector>

namespace troupe::test {

inline constexpr uint64_t echo_quit_tag = ~uint64_t{0};
inline constexpr const char* address_prefix = "address ";

inline std::string to_hex(const std::vector<uint8_t>& bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string text;
  for (uint8_t b : bytes) {
    text += digits[b >> 4];
    text += digits[b & 15];
  }
  return text;
}

inline std::vector<uint8_t> from_hex(const std::string& text) {
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i + 1 < text.size(); i += 2) bytes.push_back(uint8_t(std::stoi(text.substr(i, 2), nullptr, 16)));
  return bytes;
}

}  // namespace troupe::test
