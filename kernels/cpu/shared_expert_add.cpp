#include "kernels/cpu/shared_expert_add.hpp"

#include <cmath>

namespace troupe::cpu {

void shared_expert_add(float* out, const float* expert, const float* gate, int tokens, int64_t width) {
  for (int t = 0; t < tokens; ++t) {
    const float g = 1.0f / (1.0f + std::exp(-gate[t]));
    for (int64_t i = 0; i < width; ++i) out[t * width + i] += g * expert[t * width + i];
  }
}

}  // namespace troupe::cpu
