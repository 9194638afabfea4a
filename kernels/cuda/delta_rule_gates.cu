#include "kernels/cuda/delta_rule_gates.cuh"

#include <cstdint>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"

namespace troupe::cuda {

static constexpr int block_size = 256;

// A thread a (token, head).
static __global__ void delta_rule_gates_kernel(const __nv_bfloat16* a, int a_stride, const __nv_bfloat16* b,
                                               int b_stride, const float* neg_decay_rate, const float* dt_bias,
                                               int64_t n, int value_heads, float* g, float* beta) {
  begin_dependent();
  const int64_t i = int64_t(blockIdx.x) * block_size + threadIdx.x;
  if (i >= n) return;
  const int64_t t = i / value_heads;
  const int h = int(i % value_heads);
  const float x = __bfloat162float(a[t * a_stride + h]) + dt_bias[h];
  g[i] = neg_decay_rate[h] * (x > 20.0f ? x : log1pf(expf(x)));
  beta[i] = 1.0f / (1.0f + expf(-__bfloat162float(b[t * b_stride + h])));
}

void delta_rule_gates(const __nv_bfloat16* a, int a_stride, const __nv_bfloat16* b, int b_stride,
                      const float* neg_decay_rate, const float* dt_bias, int tokens, int value_heads, float* g,
                      float* beta, cudaStream_t stream) {
  TROUPE_CHECK(tokens >= 0 && value_heads > 0 && a_stride >= value_heads && b_stride >= value_heads,
               "bad gate shape");
  TROUPE_CHECK(a != nullptr && b != nullptr && neg_decay_rate != nullptr && dt_bias != nullptr && g != nullptr &&
                   beta != nullptr,
               "null pointer");
  const int64_t n = int64_t(tokens) * value_heads;
  if (n == 0) return;
  launch_dependent(delta_rule_gates_kernel, unsigned((n + block_size - 1) / block_size), block_size, 0, stream, a,
                   a_stride, b, b_stride, neg_decay_rate, dt_bias, n, value_heads, g, beta);
}

}  // namespace troupe::cuda
