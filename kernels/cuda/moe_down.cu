#include "kernels/cuda/moe_down.cuh"

#include <cstdint>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/moe_stream.cuh"
#include "kernels/cuda/moe_tile_gemm.cuh"

namespace troupe::cuda {

static constexpr int stream_warps = 4;

// A decode tile's warp: output columns h0 .. h0 + 15 as the mma's rows.
template <int n_tiles>
static __device__ __forceinline__ void down_outputs(const __nv_bfloat16* act, int inter, const __nv_bfloat16* w,
                                                    int hidden, const float* weights, const moe_tile::tile& tile,
                                                    int h0, float* y) {
  const int g = int(threadIdx.x) % 32 / 4, t = int(threadIdx.x) % 4;
  const __nv_bfloat16* rows[n_tiles];
#pragma unroll
  for (int n = 0; n < n_tiles; ++n) rows[n] = act + size_t(tile.row + n * moe_stream::n_tile + g) * inter;
  float acc[n_tiles][4];
  moe_stream::multiply<n_tiles>(w + size_t(h0 + g) * inter, w + size_t(h0 + 8 + g) * inter, rows, inter, acc,
                                [] { begin_dependent(); });
#pragma unroll
  for (int n = 0; n < n_tiles; ++n)
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int pair = tile.pairs[n * moe_stream::n_tile + 2 * t + i];
      if (pair < 0) continue;
      float* out = y + size_t(pair) * hidden + h0 + g;
      out[0] = weights[pair] * acc[n][i];
      out[8] = weights[pair] * acc[n][2 + i];
    }
}

// Block (column block, 16-row tile): a warp per 16 output columns. It reads the plan
// before its wait (moe_align, two kernels back, is done once moe_gate_up's blocks are past
// theirs) and starts streaming w2; only act comes from the kernel before.
static __global__ void __launch_bounds__(stream_warps * 32)
    moe_down_stream_kernel(const __nv_bfloat16* act, int inter, const __nv_bfloat16* w2, int hidden,
                           const float* weights, moe_plan plan, float* y) {
  const moe_tile::tile tile = moe_tile::find_tile(plan, blockIdx.y);
  const int h0 = (int(blockIdx.x) * stream_warps + int(threadIdx.x) / 32) * moe_stream::rows;
  if (tile.expert < 0 || h0 >= hidden) {
    begin_dependent();
    return;
  }
  const __nv_bfloat16* w = w2 + size_t(tile.expert) * hidden * inter;
  if (tile.pairs[moe_stream::n_tile] < 0)
    down_outputs<1>(act, inter, w, hidden, weights, tile, h0, y);
  else
    down_outputs<2>(act, inter, w, hidden, weights, tile, h0, y);
}

// Block (column block, tile): S::cols output columns of the tile's rows.
template <class S>
static __global__ void __launch_bounds__(S::threads)
    moe_down_kernel(const __nv_bfloat16* act, int inter, const __nv_bfloat16* w2, int hidden, const float* weights,
                    moe_plan plan, float* y) {
  extern __shared__ __align__(128) unsigned char shared[];
  const moe_tile::tile tile = moe_tile::find_tile(plan, blockIdx.y);
  const int n0 = int(blockIdx.x) * S::cols;
  if (tile.expert < 0) {
    begin_dependent();
  } else {
    const __nv_bfloat16* w = w2 + size_t(tile.expert) * hidden * inter;
    auto a_row = [&](int r) -> const __nv_bfloat16* {
      return tile.pairs[r] < 0 ? nullptr : act + size_t(tile.row + r) * inter;
    };
    auto b_row = [&](int r) -> const __nv_bfloat16* { return n0 + r < hidden ? w + size_t(n0 + r) * inter : nullptr; };
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
        float4* dst = reinterpret_cast<float4*>(y + size_t(pair) * hidden + col0 + j * 16 + lane % 2 * 8);
        dst[0] = make_float4(scale * v[0], scale * v[1], scale * v[2], scale * v[3]);
        dst[1] = make_float4(scale * v[4], scale * v[5], scale * v[6], scale * v[7]);
      }
    }
  }
}

template <class S>
static void launch(const __nv_bfloat16* act, int inter, const __nv_bfloat16* w2, int hidden, const float* weights,
                   const moe_plan& plan, float* y, cudaStream_t stream) {
  auto* kernel = moe_down_kernel<S>;
  TROUPE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(S::shared_bytes)));
  launch_dependent(kernel, dim3((hidden + S::cols - 1) / S::cols, plan.max_tiles), S::threads, S::shared_bytes, stream,
                   act, inter, w2, hidden, weights, plan, y);
}

void moe_down(const __nv_bfloat16* act, int inter, const __nv_bfloat16* w2, int hidden, const float* weights,
              const moe_plan& plan, float* y, cudaStream_t stream) {
  TROUPE_CHECK(hidden > 0 && hidden % 16 == 0, "hidden must be a positive multiple of 16");
  TROUPE_CHECK(inter > 0 && inter % 16 == 0, "inter must be a positive multiple of 16");
  TROUPE_CHECK(plan.tile_rows == moe_stream::rows || plan.tile_rows == moe_tile::prefill::rows,
               "tile height must be 16 or 64");
  TROUPE_CHECK(plan.max_tiles >= 0 && plan.max_tiles <= 65535, "too many tiles for the grid");
  TROUPE_CHECK(uintptr_t(act) % 16 == 0 && uintptr_t(w2) % 16 == 0 && uintptr_t(y) % 16 == 0,
               "pointers must be 16-byte aligned");
  if (plan.max_tiles == 0) return;
  if (plan.tile_rows == moe_tile::prefill::rows) {
    launch<moe_tile::prefill>(act, inter, w2, hidden, weights, plan, y, stream);
    return;
  }
  constexpr int block_columns = stream_warps * moe_stream::rows;
  launch_dependent(moe_down_stream_kernel, dim3((hidden + block_columns - 1) / block_columns, plan.max_tiles),
                   stream_warps * 32, 0, stream, act, inter, w2, hidden, weights, plan, y);
}

}  // namespace troupe::cuda
