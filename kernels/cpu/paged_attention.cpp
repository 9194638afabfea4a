#include "kernels/cpu/paged_attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace troupe::cpu {

void paged_attention(const float* q, int tokens, int heads, int kv_heads, int head_dim, const paged_kv& kv, int start,
                     float* out) {
  const int group = heads / kv_heads;
  const float scale = 1.0f / std::sqrt(float(head_dim));
  const int64_t row = int64_t(kv_heads) * head_dim;
  auto at = [&](const float* pool, int p, int kvh) {
    return pool + (int64_t(kv.block_table[p / kv.block_size]) * kv.block_size + p % kv.block_size) * row +
           int64_t(kvh) * head_dim;
  };
#pragma omp parallel if (int64_t(tokens) * heads * (start + tokens) > 4096)
  {
    std::vector<float> scores(static_cast<size_t>(start + tokens));
#pragma omp for collapse(2) schedule(static)
    for (int t = 0; t < tokens; ++t) {
      for (int h = 0; h < heads; ++h) {
        const float* qh = q + (int64_t(t) * heads + h) * head_dim;
        const int kvh = h / group, visible = start + t + 1;
        float max_score = -INFINITY;
        for (int p = 0; p < visible; ++p) {
          const float* kp = at(kv.keys, p, kvh);
          float s = 0.0f;
#pragma omp simd reduction(+ : s)
          for (int i = 0; i < head_dim; ++i) s += qh[i] * kp[i];
          scores[size_t(p)] = s * scale;
          max_score = std::max(max_score, scores[size_t(p)]);
        }
        float total = 0.0f;
        for (int p = 0; p < visible; ++p) {
          scores[size_t(p)] = std::exp(scores[size_t(p)] - max_score);
          total += scores[size_t(p)];
        }
        float* oh = out + (int64_t(t) * heads + h) * head_dim;
        std::fill(oh, oh + head_dim, 0.0f);
        for (int p = 0; p < visible; ++p) {
          const float w = scores[size_t(p)] / total;
          const float* vp = at(kv.values, p, kvh);
#pragma omp simd
          for (int i = 0; i < head_dim; ++i) oh[i] += w * vp[i];
        }
      }
    }
  }
}

}  // namespace troupe::cpu
