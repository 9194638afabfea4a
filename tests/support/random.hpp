#pragma once
// Seeded random inputs for tests: fresh values per case, never zeros.
#include <cstdint>
#include <random>
#include <vector>

#include "base/dtype.hpp"
#include "base/weight_view.hpp"

namespace troupe::test {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// A weight of `type` holding random values; `storage` keeps its bytes.
inline weight_view random_weight(dtype type, int64_t rows, int64_t cols, uint32_t seed, std::vector<uint8_t>& storage) {
  auto values = random_floats(size_t(rows * cols), seed);
  storage.resize(size_t(rows * cols) * dtype_size(type));
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == dtype::f32) {
      reinterpret_cast<float*>(storage.data())[i] = values[i];
    } else {
      reinterpret_cast<uint16_t*>(storage.data())[i] =
          type == dtype::bf16 ? f32_to_bf16(values[i]) : f32_to_f16(values[i]);
    }
  }
  return {type, rows, cols, storage.data()};
}

}  // namespace troupe::test
