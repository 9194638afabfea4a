#include "kernels/cuda/moe_routing.cuh"

#include <cmath>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"

namespace troupe::cuda {

static constexpr int warps_per_block = 4;
static constexpr size_t max_shared = 48 * 1024;

// One warp per token; its probabilities sit in shared memory. k rounds of a warp-wide
// arg-max (greater probability, then lower index) pick the experts, each marked taken.
static __global__ void route_top_k_kernel(const float* logits, int tokens, int experts, int k,
                                          bool normalize, int* chosen, float* weights) {
  extern __shared__ float shared[];
  begin_dependent();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int t = blockIdx.x * warps_per_block + warp;
  if (t >= tokens) return;
  float* probs = shared + size_t(warp) * experts;
  const float* l = logits + size_t(t) * experts;

  float m = -INFINITY;
  for (int e = lane; e < experts; e += 32) m = fmaxf(m, l[e]);
  for (int offset = 16; offset > 0; offset /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
  float total = 0.0f;
  for (int e = lane; e < experts; e += 32) {
    probs[e] = expf(l[e] - m);
    total += probs[e];
  }
  for (int offset = 16; offset > 0; offset /= 2) total += __shfl_xor_sync(0xffffffffu, total, offset);
  __syncwarp();
  for (int e = lane; e < experts; e += 32) probs[e] /= total;
  __syncwarp();

  int* c = chosen + size_t(t) * k;
  float* w = weights + size_t(t) * k;
  float picked = 0.0f;
  for (int i = 0; i < k; ++i) {
    float best = -1.0f;
    int best_e = experts;
    for (int e = lane; e < experts; e += 32)
      if (probs[e] > best) best = probs[e], best_e = e;
    for (int offset = 16; offset > 0; offset /= 2) {
      const float other = __shfl_xor_sync(0xffffffffu, best, offset);
      const int other_e = __shfl_xor_sync(0xffffffffu, best_e, offset);
      if (other > best || (other == best && other_e < best_e)) best = other, best_e = other_e;
    }
    picked += best;
    if (lane == 0) {
      c[i] = best_e;
      w[i] = best;
      probs[best_e] = -1.0f;
    }
    __syncwarp();
  }
  if (normalize && lane == 0)
    for (int i = 0; i < k; ++i) w[i] /= picked;
}

static void launch(const float* logits, int tokens, int experts, int k, bool normalize,
                   int* chosen, float* weights, size_t shared, cudaStream_t stream) {
  const int blocks = (tokens + warps_per_block - 1) / warps_per_block;
  launch_dependent(route_top_k_kernel, blocks, warps_per_block * 32, shared, stream, logits, tokens, experts, k,
                   normalize, chosen, weights);
}

void route_top_k(const float* logits, int tokens, int experts, int k, bool normalize, int* chosen,
                 float* weights, cudaStream_t stream) {
  TROUPE_CHECK(tokens >= 0 && experts > 0 && k > 0 && k <= experts, "bad shape");
  const size_t shared = sizeof(float) * warps_per_block * size_t(experts);
  TROUPE_CHECK(shared <= max_shared, "too many experts for one block");
  if (tokens == 0) return;
  launch(logits, tokens, experts, k, normalize, chosen, weights, shared, stream);
}

}  // namespace troupe::cuda
