#pragma once
// Message bytes for the transport tests: they differ by position and by seed, so a message
// that arrives shifted, cut short or swapped with another does not compare equal.
#include <cstdint>
#include <vector>

namespace troupe::test {

inline std::vector<uint8_t> byte_pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t((i * 131 + seed * 7919) >> 3);
  return v;
}

}  // namespace troupe::test
