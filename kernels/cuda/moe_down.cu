#include "kernels/cuda/moe_down.cuh"

#include <cstdint>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/moe_tile_gemm.cuh"

namespace troupe::cuda {

// The last block of column block blockIdx.x to arrive sums the columns' y rows of every
// token, as moe_combine does, so the sum does not depend on which block that is.
template <class S>
static __device__ void combine_if_last(const moe_plan& plan, int hidden, int n0, const float* y,
                                       __nv_bfloat16* out) {
  __shared__ bool last;
  __threadfence();  // this block's y rows are visible before it counts as arrived
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(plan.arrivals + blockIdx.x, 1) == int(gridDim.y) - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  const int k = plan.k, last_expert = plan.first_expert + plan.local_experts;
  constexpr int quads = S::cols / 4;
  for (int i = int(threadIdx.x); i < plan.tokens * quads; i += S::threads) {
    const int t = i / quads, c = n0 + i % quads * 4;
    if (c >= hidden) continue;
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int j = 0; j < k; ++j) {
      const int e = plan.chosen[t * k + j];
      if (e < plan.first_expert || e >= last_expert) continue;
      const float4 v = __ldcg(reinterpret_cast<const float4*>(y + size_t(t * k + j) * hidden + c));
      sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
    }
    uint2 packed;
    __nv_bfloat162* halves = reinterpret_cast<__nv_bfloat162*>(&packed);
    halves[0] = __floats2bfloat162_rn(sum.x, sum.y);
    halves[1] = __floats2bfloat162_rn(sum.z, sum.w);
    *reinterpret_cast<uint2*>(out + size_t(t) * hidden + c) = packed;
  }
}

// Block (column block, tile): S::cols output columns of the tile's rows.
template <class S, bool inline_plan>
static __global__ void __launch_bounds__(S::threads)
    moe_down_kernel(const __nv_bfloat16* act, int inter, const __nv_bfloat16* w2, int hidden,
                    const float* weights, moe_plan plan, float* y, __nv_bfloat16* out) {
  extern __shared__ __align__(128) unsigned char shared[];
  __shared__ int tile_pairs[S::rows];
  const moe_tile::tile tile = moe_tile::find_tile<S, inline_plan>(plan, blockIdx.y, tile_pairs);
  const int n0 = int(blockIdx.x) * S::cols;
  if (tile.expert < 0) {
    begin_dependent();
  } else {
    const __nv_bfloat16* w = w2 + size_t(tile.expert) * hidden * inter;
    auto a_row = [&](int r) -> const __nv_bfloat16* {
      return tile.pairs[r] < 0 ? nullptr : act + size_t(tile.row + r) * inter;
    };
    auto b_row = [&](int r) -> const __nv_bfloat16* {
      return n0 + r < hidden ? w + size_t(n0 + r) * inter : nullptr;
    };
    moe_tile::accumulator acc[S::frags_m][S::frags_n];
    moe_tile::multiply<S>(a_row, b_row, inter, reinterpret_cast<__nv_bfloat16*>(shared), acc,
                          [] { begin_dependent(); });

    const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
    const bool sums = int(threadIdx.x) < S::group_threads;  // k group 0 holds them
    float* scratch = reinterpret_cast<float*>(shared) + warp * 256;
    const int row0 = warp / S::warps_n * S::frags_m * 16 + lane / 2;
    const int col0 = n0 + warp % S::warps_n * S::frags_n * 16;
#pragma unroll
    for (int m = 0; sums && m < S::frags_m; ++m) {
      const int pair = tile.pairs[row0 + m * 16];
      const float scale = pair < 0 ? 0.0f : weights[pair];
#pragma unroll
      for (int j = 0; j < S::frags_n; ++j) {
        if (col0 + j * 16 >= hidden) break;  // whole fragment out
        float v[8];
        moe_tile::lane_values(acc[m][j], scratch, v);
        if (pair < 0) continue;
        float4* dst =
            reinterpret_cast<float4*>(y + size_t(pair) * hidden + col0 + j * 16 + lane % 2 * 8);
        dst[0] = make_float4(scale * v[0], scale * v[1], scale * v[2], scale * v[3]);
        dst[1] = make_float4(scale * v[4], scale * v[5], scale * v[6], scale * v[7]);
      }
    }
  }
  if constexpr (inline_plan) combine_if_last<S>(plan, hidden, n0, y, out);
}

template <class S, bool inline_plan>
static void launch(const __nv_bfloat16* act, int inter, const __nv_bfloat16* w2, int hidden,
                   const float* weights, const moe_plan& plan, float* y, __nv_bfloat16* out,
                   cudaStream_t stream) {
  auto* kernel = moe_down_kernel<S, inline_plan>;
  TROUPE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         int(S::shared_bytes)));
  launch_dependent(kernel, dim3((hidden + S::cols - 1) / S::cols, plan.max_tiles), S::threads,
                   S::shared_bytes, stream, act, inter, w2, hidden, weights, plan, y, out);
}

void moe_down(const __nv_bfloat16* act, int inter, const __nv_bfloat16* w2, int hidden,
              const float* weights, const moe_plan& plan, float* y, __nv_bfloat16* out,
              cudaStream_t stream) {
  TROUPE_CHECK(hidden > 0 && hidden % 16 == 0, "hidden must be a positive multiple of 16");
  TROUPE_CHECK(inter > 0 && inter % 16 == 0, "inter must be a positive multiple of 16");
  TROUPE_CHECK(
      plan.tile_rows == moe_tile::decode::rows || plan.tile_rows == moe_tile::prefill::rows,
      "tile height must be 16 or 64");
  TROUPE_CHECK(plan.max_tiles >= 0 && plan.max_tiles <= 65535, "too many tiles for the grid");
  TROUPE_CHECK(uintptr_t(act) % 16 == 0 && uintptr_t(w2) % 16 == 0 && uintptr_t(y) % 16 == 0,
               "pointers must be 16-byte aligned");
  const bool inline_plan = plan.chosen != nullptr;
  TROUPE_CHECK(!inline_plan || (plan.tile_rows == moe_tile::decode::rows && plan.k > 0 &&
                                plan.tokens * plan.k <= moe_inline_pairs &&
                                plan.arrivals != nullptr && uintptr_t(out) % 8 == 0 &&
                                out != nullptr),
               "an inline plan takes 16-row tiles, at most moe_inline_pairs pairs, arrivals "
               "and an 8-byte aligned out");
  if (plan.max_tiles == 0) return;
  if (inline_plan)
    launch<moe_tile::inline_decode, true>(act, inter, w2, hidden, weights, plan, y, out, stream);
  else if (plan.tile_rows == moe_tile::decode::rows)
    launch<moe_tile::decode, false>(act, inter, w2, hidden, weights, plan, y, out, stream);
  else
    launch<moe_tile::prefill, false>(act, inter, w2, hidden, weights, plan, y, out, stream);
}

}  // namespace troupe::cuda
