#pragma once
// Element types found in checkpoints, and scalar conversions to fp32.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace troupe {

enum class dtype : uint8_t { f32, f16, bf16 };

inline size_t dtype_size(dtype t) { return t == dtype::f32 ? 4 : 2; }

inline std::string_view dtype_name(dtype t) {
  switch (t) {
    case dtype::f32:
      return "F32";
    case dtype::f16:
      return "F16";
    case dtype::bf16:
      return "BF16";
  }
  return "?";
}

inline float bf16_to_f32(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even, as torch does when casting fp32 to bf16.
inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);  // NaN stays NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

inline float load_as_f32(dtype t, const void* base, size_t i) {
  switch (t) {
    case dtype::f32:
      return static_cast<const float*>(base)[i];
    case dtype::f16:
      return f16_to_f32(static_cast<const uint16_t*>(base)[i]);
    case dtype::bf16:
      return bf16_to_f32(static_cast<const uint16_t*>(base)[i]);
  }
  return 0.0f;
}

}  // namespace troupe
