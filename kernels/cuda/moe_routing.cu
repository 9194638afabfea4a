#include "kernels/cuda/moe_routing.cuh"

#include <cmath>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"

namespace troupe::cuda {

static constexpr int warps_per_block = 4;
static constexpr size_t max_shared = 48 * 1024;

// One warp per token; its probabilities sit in shared memory. k rounds of a warp-wide
// arg-max (greater probability, then lower index) pick the experts: lane i keeps the i-th
// pick in registers, the lane holding the picked expert marks it taken, and the picks are
// written once at the end, already normalized (at batch 1 this kernel is on the decode
// step's critical path every layer: writing each pick from lane 0 in its round, then
// reading them back to normalize, was a chain of dependent global stores and loads).
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
  for (int e = lane; e < experts; e += 32) probs[e] /= total;  // each lane reads only its own

  float picked = 0.0f, mine = 0.0f;
  int mine_e = 0;
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
    if (lane == i) mine = best, mine_e = best_e;
    if (lane == best_e % 32) probs[best_e] = -1.0f;  // its own entry: no other lane reads it
  }
  if (lane < k) {
    chosen[size_t(t) * k + lane] = mine_e;
    weights[size_t(t) * k + lane] = normalize ? mine / picked : mine;
  }
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
  TROUPE_CHECK(k <= 32, "at most 32 experts a token: a lane holds each pick");
  const size_t shared = sizeof(float) * warps_per_block * size_t(experts);
  TROUPE_CHECK(shared <= max_shared, "too many experts for one block");
  if (tokens == 0) return;
  launch(logits, tokens, experts, k, normalize, chosen, weights, shared, stream);
}

}  // namespace troupe::cuda
