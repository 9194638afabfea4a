#include "kernels/cuda/moe_gate_up.cuh"

#include <cstdint>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/moe_stream.cuh"
#include "kernels/cuda/moe_tile_gemm.cuh"

namespace troupe::cuda {

static constexpr int stream_warps = 4;

// A decode tile's warp: 8 outputs j, their gate rows as rows g and their up rows as rows
// g + 8 of the mma, so a lane ends with gate and up of output j0 + g for its tokens.
template <int n_tiles>
static __device__ __forceinline__ void gate_up_outputs(const __nv_bfloat16* x, int hidden, int k,
                                                       const __nv_bfloat16* w, int inter, const moe_tile::tile& tile,
                                                       int j0, __nv_bfloat16* act) {
  const int g = int(threadIdx.x) % 32 / 4, t = int(threadIdx.x) % 4;
  const __nv_bfloat16* rows[n_tiles];
#pragma unroll
  for (int n = 0; n < n_tiles; ++n) {
    const int pair = tile.pairs[n * moe_stream::n_tile + g];
    rows[n] = x + size_t((pair < 0 ? tile.pairs[0] : pair) / k) * hidden;
  }
  float acc[n_tiles][4];
  moe_stream::multiply<n_tiles>(w + size_t(j0 + g) * hidden, w + size_t(inter + j0 + g) * hidden, rows, hidden, acc,
                                [] {});
#pragma unroll
  for (int n = 0; n < n_tiles; ++n)
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const float gate = acc[n][i], up = acc[n][2 + i];
      const int row = tile.row + n * moe_stream::n_tile + 2 * t + i;
      act[size_t(row) * inter + j0 + g] = __float2bfloat16(gate / (1.0f + expf(-gate)) * up);
    }
}

// Block (column block, 16-row tile): a warp per 8 outputs. A tile of at most 8 pairs
// leaves rows 8.. of act unwritten, and moe_down then reads only its first 8.
static __global__ void __launch_bounds__(stream_warps * 32)
    moe_gate_up_stream_kernel(const __nv_bfloat16* x, int hidden, int k, const __nv_bfloat16* w13, int inter,
                              moe_plan plan, __nv_bfloat16* act) {
  begin_dependent();
  const moe_tile::tile tile = moe_tile::find_tile(plan, blockIdx.y);
  const int j0 = (int(blockIdx.x) * stream_warps + int(threadIdx.x) / 32) * moe_stream::n_tile;
  if (tile.expert < 0 || j0 >= inter) return;
  const __nv_bfloat16* w = w13 + size_t(tile.expert) * 2 * inter * hidden;
  if (tile.pairs[moe_stream::n_tile] < 0)
    gate_up_outputs<1>(x, hidden, k, w, inter, tile, j0, act);
  else
    gate_up_outputs<2>(x, hidden, k, w, inter, tile, j0, act);
}

// Block (column block, tile): S::cols / 2 gate columns and the same up columns. Each
// warp's weight rows are its gate rows followed by the up rows of the same columns, so
// fragment j and fragment j + frags_n / 2 of a thread hold the same outputs' gate and up.
template <class S>
static __global__ void __launch_bounds__(S::threads)
    moe_gate_up_kernel(const __nv_bfloat16* x, int hidden, int k, const __nv_bfloat16* w13, int inter, moe_plan plan,
                       __nv_bfloat16* act) {
  begin_dependent();
  extern __shared__ __align__(128) unsigned char shared[];
  const moe_tile::tile tile = moe_tile::find_tile(plan, blockIdx.y);
  if (tile.expert < 0) return;
  constexpr int warp_cols = S::frags_n / 2 * 16;
  const int n0 = int(blockIdx.x) * (S::cols / 2);
  const __nv_bfloat16* w = w13 + size_t(tile.expert) * 2 * inter * hidden;
  auto a_row = [&](int r) -> const __nv_bfloat16* {
    const int pair = tile.pairs[r];
    return pair < 0 ? nullptr : x + size_t(pair / k) * hidden;
  };
  auto b_row = [&](int r) -> const __nv_bfloat16* {
    const int n = n0 + r / (2 * warp_cols) * warp_cols + r % warp_cols;
    const bool up = r % (2 * warp_cols) >= warp_cols;
    return n < inter ? w + size_t(up ? inter + n : n) * hidden : nullptr;
  };
  moe_tile::accumulator acc[S::frags_m][S::frags_n];
  moe_tile::multiply<S>(a_row, b_row, hidden, reinterpret_cast<__nv_bfloat16*>(shared), acc, [] {});
  if (int(threadIdx.x) >= S::group_threads) return;  // k group 0 holds the sums

  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  float* scratch = reinterpret_cast<float*>(shared) + warp * 256;
  const int row0 = tile.row + warp / S::warps_n * S::frags_m * 16 + lane / 2;
  const int col0 = n0 + warp % S::warps_n * warp_cols + lane % 2 * 8;
#pragma unroll
  for (int m = 0; m < S::frags_m; ++m)
#pragma unroll
    for (int j = 0; j < S::frags_n / 2; ++j) {
      if (n0 + warp % S::warps_n * warp_cols + j * 16 >= inter) break;  // whole fragment out
      moe_tile::accumulator& gate = acc[m][j];
      const moe_tile::accumulator& up = acc[m][j + S::frags_n / 2];
#pragma unroll
      for (int i = 0; i < gate.num_elements; ++i) gate.x[i] = gate.x[i] / (1.0f + expf(-gate.x[i])) * up.x[i];
      float v[8];
      moe_tile::lane_values(gate, scratch, v);
      uint4 packed;
      __nv_bfloat162* halves = reinterpret_cast<__nv_bfloat162*>(&packed);
#pragma unroll
      for (int i = 0; i < 4; ++i) halves[i] = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
      *reinterpret_cast<uint4*>(act + size_t(row0 + m * 16) * inter + col0 + j * 16) = packed;
    }
}

template <class S>
static void launch(const __nv_bfloat16* x, int hidden, int k, const __nv_bfloat16* w13, int inter, const moe_plan& plan,
                   __nv_bfloat16* act, cudaStream_t stream) {
  const dim3 grid((inter + S::cols / 2 - 1) / (S::cols / 2), plan.max_tiles);
  auto* kernel = moe_gate_up_kernel<S>;
  TROUPE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(S::shared_bytes)));
  launch_dependent(kernel, grid, S::threads, S::shared_bytes, stream, x, hidden, k, w13, inter, plan, act);
}

void moe_gate_up(const __nv_bfloat16* x, int hidden, int k, const __nv_bfloat16* w13, int inter, const moe_plan& plan,
                 __nv_bfloat16* act, cudaStream_t stream) {
  TROUPE_CHECK(hidden > 0 && hidden % 16 == 0, "hidden must be a positive multiple of 16");
  TROUPE_CHECK(inter > 0 && inter % 16 == 0, "inter must be a positive multiple of 16");
  TROUPE_CHECK(k > 0, "bad k");
  TROUPE_CHECK(plan.tile_rows == moe_stream::rows || plan.tile_rows == moe_tile::prefill::rows,
               "tile height must be 16 or 64");
  TROUPE_CHECK(plan.max_tiles >= 0 && plan.max_tiles <= 65535, "too many tiles for the grid");
  TROUPE_CHECK(uintptr_t(x) % 16 == 0 && uintptr_t(w13) % 16 == 0 && uintptr_t(act) % 16 == 0,
               "pointers must be 16-byte aligned");
  if (plan.max_tiles == 0) return;
  if (plan.tile_rows == moe_tile::prefill::rows) {
    launch<moe_tile::prefill>(x, hidden, k, w13, inter, plan, act, stream);
    return;
  }
  constexpr int block_outputs = stream_warps * moe_stream::n_tile;
  launch_dependent(moe_gate_up_stream_kernel, dim3((inter + block_outputs - 1) / block_outputs, plan.max_tiles),
                   stream_warps * 32, 0, stream, x, hidden, k, w13, inter, plan, act);
}

}  // namespace troupe::cuda
