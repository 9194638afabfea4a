#pragma once
// The main loop of moe_gate_up's and moe_down's prefill tiles (64 rows; the decode tiles
// are moe_stream.cuh's), and how their blocks find their tiles. A block multiplies `rows` activation rows by `cols`
// weight rows (Linear weights, [out, in]) over k: bf16 WMMA with fp32 accumulators, both operands streamed through
// shared memory in a ring of `stages` k-chunks filled by 16-byte cp.async copies. With warps_k > 1 the block is that
// many groups of warps, each with its own ring over its share of k (so a small batch still has warps enough to keep
// memory busy), their sums added in group order. An output element's bits depend on the shape, never on the batch in
// it.
#include <cuda_bf16.h>
#include <mma.h>

#include "kernels/cuda/async_copy.cuh"
#include "kernels/cuda/moe_align.cuh"

namespace troupe::cuda::moe_tile {

template <int rows_, int warps_m_, int warps_n_, int frags_m_, int frags_n_, int chunk_k_, int stages_, int warps_k_>
struct shape {
  static constexpr int rows = rows_;
  static constexpr int warps_m = warps_m_, warps_n = warps_n_, warps_k = warps_k_;
  static constexpr int frags_m = frags_m_, frags_n = frags_n_;  // 16 x 16 outputs per warp
  static constexpr int chunk_k = chunk_k_, stages = stages_;
  static constexpr int cols = warps_n * frags_n * 16;
  static constexpr int group_threads = warps_m * warps_n * 32;  // one k group
  static constexpr int threads = group_threads * warps_k;
  // 16 bytes of padding per row put the 8 rows of an ldmatrix on distinct banks.
  static constexpr int pitch = chunk_k + 8;
  static constexpr int stage_elems = (rows + cols) * pitch;
  static constexpr int ring_elems = stages * stage_elems;  // one group's
  static constexpr size_t shared_bytes = sizeof(__nv_bfloat16) * warps_k * ring_elems;
  static_assert(rows == warps_m * frags_m * 16, "the warps must cover the tile's rows");
  static_assert(chunk_k % 16 == 0 && stages >= 2, "bad k-chunk ring");
  static_assert(size_t(threads / 32) * 256 * sizeof(float) <= shared_bytes &&
                    size_t(threads - group_threads) * frags_m * frags_n * 8 * sizeof(float) <= shared_bytes,
                "the epilogue's and the k groups' scratch must fit in the rings");
};

// Prefill: 8 warps of 32 x 64 outputs on a 64 x 256 tile, two blocks per SM, k in chunks
// of 64 with one in flight: half the barriers of 32-wide chunks, which is what counts
// (bench_cuda_moe on the H200, 512 tokens: 0.468 ms against 0.587 ms with 4 stages of 32).
using prefill = shape<64, 2, 4, 2, 4, 64, 2, 1>;

using accumulator = nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float>;

// Waits for the threads of this k group (all of the block when there is one group). The
// barrier ids are immediates: a register id would reserve all sixteen of the SM's.
template <class S>
__device__ inline void group_barrier(int group) {
  static_assert(S::warps_k <= 2, "one named barrier per k group, two at most");
  if constexpr (S::warps_k == 1)
    __syncthreads();
  else if (group == 0)
    asm volatile("bar.sync 1, %0;\n" ::"n"(S::group_threads) : "memory");
  else
    asm volatile("bar.sync 2, %0;\n" ::"n"(S::group_threads) : "memory");
}

// acc[m][n] = A[warp's rows m] * B[warp's rows n]^T over k, where a_row(r) and b_row(r)
// give the start of row r of A (r < rows) and of B (r < cols) in global memory, or null
// for a row of zeros. Warp w of a k group owns A rows (w / warps_n) * frags_m * 16 on and
// B rows (w % warps_n) * frags_n * 16 on; group g takes the g-th of warps_k near-equal
// runs of 16-wide k steps. On return the accumulators of k group 0 (the block's first
// group_threads threads) hold the sums, the other groups' are spent. k % 16 == 0, rows
// 16-byte aligned. The first chunks of B are requested before before_a() runs and A is
// only read after it, so it may wait for the kernel that writes A. Every thread of the
// block calls it; leaves `smem` free.
template <class S, class A, class B, class W>
__device__ void multiply(A a_row, B b_row, int k, __nv_bfloat16* smem, accumulator (&acc)[S::frags_m][S::frags_n],
                         W before_a) {
  namespace wmma = nvcuda::wmma;
  constexpr int per_row = S::chunk_k / 8;
  constexpr int row_step = S::group_threads / per_row;
  static_assert(S::group_threads % per_row == 0 && S::rows % row_step == 0 && S::cols % row_step == 0,
                "the copies must split evenly over the threads");
  constexpr int a_copies = S::rows / row_step, b_copies = S::cols / row_step;
  const int group = int(threadIdx.x) / S::group_threads, thread = int(threadIdx.x) % S::group_threads;
  __nv_bfloat16* const ring = smem + group * S::ring_elems;
  const int k_begin = k / 16 * group / S::warps_k * 16;
  k = k / 16 * (group + 1) / S::warps_k * 16 - k_begin;
  // A thread copies the same column of a fixed set of rows in every chunk.
  const int col = thread % per_row * 8, row = thread / per_row;
  const __nv_bfloat16* a_src[a_copies];
  const __nv_bfloat16* b_src[b_copies];
#pragma unroll
  for (int i = 0; i < a_copies; ++i) {
    a_src[i] = a_row(row + i * row_step);
    if (a_src[i] != nullptr) a_src[i] += k_begin;
  }
#pragma unroll
  for (int i = 0; i < b_copies; ++i) {
    b_src[i] = b_row(row + i * row_step);
    if (b_src[i] != nullptr) b_src[i] += k_begin;
  }

  const int chunks = (k + S::chunk_k - 1) / S::chunk_k;
  auto load_a = [&](int chunk) {
    __nv_bfloat16* a = ring + chunk % S::stages * S::stage_elems;
    const int kc = chunk * S::chunk_k + col;
#pragma unroll
    for (int i = 0; i < a_copies; ++i)
      copy_16(a + (row + i * row_step) * S::pitch + col, kc < k && a_src[i] != nullptr ? a_src[i] + kc : nullptr);
  };
  auto load_b = [&](int chunk) {
    __nv_bfloat16* b = ring + chunk % S::stages * S::stage_elems + S::rows * S::pitch;
    const int kc = chunk * S::chunk_k + col;
#pragma unroll
    for (int i = 0; i < b_copies; ++i)
      copy_16(b + (row + i * row_step) * S::pitch + col, kc < k && b_src[i] != nullptr ? b_src[i] + kc : nullptr);
  };

  // One commit group per chunk of B, then one per chunk of A, for the first stages - 1
  // chunks; after that one group per chunk with both, empty past the end. So
  // wait_copies<stages - 2> always means "chunk c has landed".
  for (int s = 0; s < S::stages - 1; ++s) {
    if (s < chunks) load_b(s);
    commit_copies();
  }
  before_a();
  for (int s = 0; s < S::stages - 1; ++s) {
    if (s < chunks) load_a(s);
    commit_copies();
  }
#pragma unroll
  for (int m = 0; m < S::frags_m; ++m)
#pragma unroll
    for (int n = 0; n < S::frags_n; ++n) wmma::fill_fragment(acc[m][n], 0.0f);

  const int warp = thread / 32;
  const int a_first = warp / S::warps_n * S::frags_m * 16;
  const int b_first = S::rows + warp % S::warps_n * S::frags_n * 16;
  for (int c = 0; c < chunks; ++c) {
    wait_copies<S::stages - 2>();
    group_barrier<S>(group);  // chunk c visible to all; the slot refilled below is read by no one
    if (c + S::stages - 1 < chunks) {
      load_a(c + S::stages - 1);
      load_b(c + S::stages - 1);
    }
    commit_copies();
    const __nv_bfloat16* stage = ring + c % S::stages * S::stage_elems;
    const int depth = k - c * S::chunk_k;
#pragma unroll
    for (int kk = 0; kk < S::chunk_k; kk += 16) {
      if (kk >= depth) break;
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a[S::frags_m];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b[S::frags_n];
#pragma unroll
      for (int m = 0; m < S::frags_m; ++m)
        wmma::load_matrix_sync(a[m], stage + (a_first + m * 16) * S::pitch + kk, S::pitch);
#pragma unroll
      for (int n = 0; n < S::frags_n; ++n)
        wmma::load_matrix_sync(b[n], stage + (b_first + n * 16) * S::pitch + kk, S::pitch);
#pragma unroll
      for (int m = 0; m < S::frags_m; ++m)
#pragma unroll
        for (int n = 0; n < S::frags_n; ++n) wmma::mma_sync(acc[m][n], a[m], b[n], acc[m][n]);
    }
  }
  wait_copies<0>();
  __syncthreads();
  if constexpr (S::warps_k > 1) {
    // Groups 1.. leave their sums in the rings' memory, in lane order (the fragment layout
    // is the same in every warp); group 0 adds them in group order.
    constexpr int per_warp = S::frags_m * S::frags_n * accumulator::num_elements * 32;
    float* scratch = reinterpret_cast<float*>(smem);
    const int lane = thread % 32;
    auto at = [&](int g, int m, int n, int i) {
      return scratch + ((g - 1) * (S::group_threads / 32) + warp) * per_warp +
             ((m * S::frags_n + n) * accumulator::num_elements + i) * 32 + lane;
    };
    if (group > 0)
#pragma unroll
      for (int m = 0; m < S::frags_m; ++m)
#pragma unroll
        for (int n = 0; n < S::frags_n; ++n)
#pragma unroll
          for (int i = 0; i < acc[m][n].num_elements; ++i) *at(group, m, n, i) = acc[m][n].x[i];
    __syncthreads();
    if (group == 0)
      for (int g = 1; g < S::warps_k; ++g)
#pragma unroll
        for (int m = 0; m < S::frags_m; ++m)
#pragma unroll
          for (int n = 0; n < S::frags_n; ++n)
#pragma unroll
            for (int i = 0; i < acc[m][n].num_elements; ++i) acc[m][n].x[i] += *at(g, m, n, i);
    __syncthreads();  // the scratch is read before an epilogue reuses the memory
  }
}

// This lane's 8 values of a 16 x 16 accumulator: row lane / 2, columns (lane % 2) * 8 on,
// through the warp's 256-float scratch. Every lane of the warp calls it.
__device__ inline void lane_values(const accumulator& acc, float* scratch, float (&v)[8]) {
  const int lane = int(threadIdx.x) % 32;
  __syncwarp();  // the previous fragment's reads are done
  nvcuda::wmma::store_matrix_sync(scratch, acc, 16, nvcuda::wmma::mem_row_major);
  __syncwarp();
#pragma unroll
  for (int i = 0; i < 8; ++i) v[i] = scratch[lane / 2 * 16 + lane % 2 * 8 + i];
}

// A block's tile: its local expert, its first row in act, and the pair of each of its
// rows (-1 for padding). expert is -1 when the block has no tile.
struct tile {
  int expert, row;
  const int* pairs;
};

// The tile of block row `slot` in moe_align's plan.
__device__ inline tile find_tile(const moe_plan& plan, int slot) {
  if (slot >= *plan.tile_count) return {-1, 0, nullptr};
  const int2 t = plan.tiles[slot];
  return {t.x, t.y, plan.sorted_pairs + t.y};
}

}  // namespace troupe::cuda::moe_tile
