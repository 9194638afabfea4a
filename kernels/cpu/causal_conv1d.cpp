#include "kernels/cpu/causal_conv1d.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace troupe::cpu {

void causal_conv1d_silu(const float* x, int tokens, int channels, const float* weight, int kernel, float* state,
                        float* out) {
  const int past = kernel - 1;
  // Row i of the state followed by x.
  auto input = [&](int i) { return i < past ? state + int64_t(i) * channels : x + int64_t(i - past) * channels; };
#pragma omp parallel for schedule(static) if (int64_t(tokens) * channels * kernel > 65536)
  for (int t = 0; t < tokens; ++t) {
    float* o = out + int64_t(t) * channels;
    for (int c = 0; c < channels; ++c) o[c] = 0.0f;
    for (int j = 0; j < kernel; ++j) {
      const float* in = input(t + j);
      for (int c = 0; c < channels; ++c) o[c] += weight[int64_t(c) * kernel + j] * in[c];
    }
    for (int c = 0; c < channels; ++c) o[c] = o[c] / (1.0f + std::exp(-o[c]));
  }
  if (past == 0) return;
  // The new state is the last `past` rows of state followed by x.
  const size_t row = sizeof(float) * size_t(channels);
  if (tokens >= past) {
    std::memcpy(state, x + int64_t(tokens - past) * channels, row * size_t(past));
  } else {
    std::memmove(state, state + int64_t(tokens) * channels, row * size_t(past - tokens));
    std::memcpy(state + int64_t(past - tokens) * channels, x, row * size_t(tokens));
  }
}

}  // namespace troupe::cpu
