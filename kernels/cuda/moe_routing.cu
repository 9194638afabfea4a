#include "kernels/cuda/moe_routing.cuh"

#include <cmath>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"

namespace troupe::cuda {

static constexpr int warps_per_block = 4;
static constexpr int max_experts = 1024;  // 32 a lane

// One warp per token, lane l holding experts l, l + 32, ... in registers. k rounds of a
// warp-wide arg-max (greater probability, then lower index) pick the experts, each two
// warp reductions of a key (probability bits + 1, 0 for none) and of the index holding
// the greatest; the lane holding the pick marks it taken, lane i keeps the i-th pick, and
// the picks are written once at the end, already normalised. At batch 1 this kernel is on
// the decode step's critical path every layer (on the H200, leaving it out of the step made
// batch-1 decode 386 -> 476 tok/s): probabilities in shared memory and butterflies of
// shuffles for every round made it a long chain of dependent latencies. With a shared
// expert, lane k adds its pick: slot `experts`, weighted by the sigmoid of its gate's logit.
template <int per_lane>
static __global__ void route_top_k_kernel(const float* logits, int tokens, int experts, int k, bool normalize,
                                          bool shared_expert, int* chosen, float* weights) {
  begin_dependent();
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int t = int(blockIdx.x) * warps_per_block + warp;
  if (t >= tokens) return;
  const int columns = experts + int(shared_expert), picks = k + int(shared_expert);
  const float* l = logits + size_t(t) * columns;
  float p[per_lane];
  unsigned taken = 0;  // bit j: expert lane + 32 j is picked, or past the end
  float m = -INFINITY;
#pragma unroll
  for (int j = 0; j < per_lane; ++j) {
    const int e = lane + 32 * j;
    p[j] = e < experts ? l[e] : -INFINITY;
    if (e >= experts) taken |= 1u << j;
    m = fmaxf(m, p[j]);
  }
  for (int offset = 16; offset > 0; offset /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
  float total = 0.0f;
#pragma unroll
  for (int j = 0; j < per_lane; ++j)
    if (lane + 32 * j < experts) {
      p[j] = expf(p[j] - m);
      total += p[j];
    }
  for (int offset = 16; offset > 0; offset /= 2) total += __shfl_xor_sync(0xffffffffu, total, offset);
#pragma unroll
  for (int j = 0; j < per_lane; ++j) p[j] /= total;

  float picked = 0.0f, mine = 0.0f;
  int mine_e = 0;
  for (int i = 0; i < k; ++i) {
    float best = -1.0f;
    int best_j = -1;
#pragma unroll
    for (int j = 0; j < per_lane; ++j)
      if ((taken >> j & 1u) == 0 && p[j] > best) best = p[j], best_j = j;
    // Probabilities are not negative, so their bits order them as unsigned integers.
    const unsigned key = best_j < 0 ? 0u : __float_as_uint(best) + 1u;
    const unsigned top = __reduce_max_sync(0xffffffffu, key);
    const int pick = int(__reduce_min_sync(0xffffffffu, key == top ? unsigned(lane + 32 * best_j) : ~0u));
    const float value = __uint_as_float(top - 1u);
    picked += value;
    if (lane == i) mine = value, mine_e = pick;
    if (lane == pick % 32) taken |= 1u << (pick / 32);
  }
  if (lane < k) {
    chosen[size_t(t) * picks + lane] = mine_e;
    weights[size_t(t) * picks + lane] = normalize ? mine / picked : mine;
  } else if (shared_expert && lane == k) {
    chosen[size_t(t) * picks + k] = experts;
    weights[size_t(t) * picks + k] = 1.0f / (1.0f + expf(-l[experts]));
  }
}

template <int per_lane>
static void launch(const float* logits, int tokens, int experts, int k, bool normalize, bool shared_expert, int* chosen,
                   float* weights, cudaStream_t stream) {
  const int blocks = (tokens + warps_per_block - 1) / warps_per_block;
  launch_dependent(route_top_k_kernel<per_lane>, blocks, warps_per_block * 32, 0, stream, logits, tokens, experts, k,
                   normalize, shared_expert, chosen, weights);
}

void route_top_k(const float* logits, int tokens, int experts, int k, bool normalize, bool shared_expert, int* chosen,
                 float* weights, cudaStream_t stream) {
  TROUPE_CHECK(tokens >= 0 && experts > 0 && k > 0 && k <= experts, "bad shape");
  TROUPE_CHECK(k + int(shared_expert) <= 32, "at most 32 experts a token: a lane holds each pick");
  TROUPE_CHECK(experts <= max_experts, "at most 1024 experts: a lane holds 32 of them");
  if (tokens == 0) return;
  if (experts <= 128)
    launch<4>(logits, tokens, experts, k, normalize, shared_expert, chosen, weights, stream);
  else if (experts <= 256)
    launch<8>(logits, tokens, experts, k, normalize, shared_expert, chosen, weights, stream);
  else if (experts <= 512)
    launch<16>(logits, tokens, experts, k, normalize, shared_expert, chosen, weights, stream);
  else
    launch<32>(logits, tokens, experts, k, normalize, shared_expert, chosen, weights, stream);
}

}  // namespace troupe::cuda
