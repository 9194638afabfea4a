#include "kernels/cpu/rope.hpp"

#include <cmath>
#include <cstdint>
#include <vector>

namespace troupe::cpu {

void rope(float* x, int tokens, int heads, int head_dim, const int* positions, float theta, int rotary_dim) {
  const int rotary = rotary_dim > 0 ? rotary_dim : head_dim, half = rotary / 2;
  // Frequencies computed in fp32 like transformers' inv_freq, so angles round the same way.
  std::vector<float> inv_freq(static_cast<size_t>(half));
  for (int i = 0; i < half; ++i) inv_freq[size_t(i)] = 1.0f / std::pow(theta, float(2 * i) / float(rotary));
  for (int t = 0; t < tokens; ++t) {
    std::vector<float> cos_v(static_cast<size_t>(half)), sin_v(static_cast<size_t>(half));
    for (int i = 0; i < half; ++i) {
      const float angle = float(positions[t]) * inv_freq[size_t(i)];
      cos_v[size_t(i)] = std::cos(angle);
      sin_v[size_t(i)] = std::sin(angle);
    }
    for (int h = 0; h < heads; ++h) {
      float* v = x + (int64_t(t) * heads + h) * head_dim;
      for (int i = 0; i < half; ++i) {
        const float a = v[i], b = v[i + half];
        v[i] = a * cos_v[size_t(i)] - b * sin_v[size_t(i)];
        v[i + half] = b * cos_v[size_t(i)] + a * sin_v[size_t(i)];
      }
    }
  }
}

}  // namespace troupe::cpu
