#include "kernels/cuda/gemv.cuh"

#include <cstdint>

#include "base/check.hpp"
#include "kernels/cuda/async_copy.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/rms_norm_row.cuh"
#include "kernels/cuda/widen_bf16.cuh"

namespace troupe::cuda {

static constexpr int threads = 256, warps = threads / 32;
static constexpr int rows_per_warp = 4;
// Steps of 16-byte loads per weight row that a lane keeps in flight.
static constexpr int unroll = 2;
// A thread with at most this many weight chunks to read (16 B each: 64 KB a block) copies
// them all to shared memory before it waits for the kernel before: at decode sizes the
// weights then stream in while that kernel still runs (one wave of blocks, each holding
// its whole share), and only x is left to wait for.
static constexpr int max_prefetched = 16;
// (row, k part) pieces to aim for: about 2048 warps, so every SM streams from many.
static constexpr int target_pieces = 8192;
static_assert(warps * rows_per_warp * gemv_max_rows <= threads, "a thread per output of a block");

// The 16-byte chunks c, c + stride, ... (unroll of them) of each of the warp's rows.
static __device__ __forceinline__ void load_weights(const uint4* const (&rows)[rows_per_warp], int c, int stride,
                                                    int chunks, uint4 (&v)[unroll][rows_per_warp]) {
#pragma unroll
  for (int u = 0; u < unroll; ++u)
#pragma unroll
    for (int r = 0; r < rows_per_warp; ++r)
      if (c + u * stride < chunks) v[u][r] = __ldg(rows[r] + c + u * stride);
}

// Each accumulator takes its chunks in ascending order, 8 elements each in order, whatever
// M is and wherever the weights were staged: this is what keeps a row's bits independent of
// the batch. weight(u, r) is the u-th of this step's chunks of row r.
template <int M, class Weight>
static __device__ __forceinline__ void accumulate(Weight weight, const uint4* xs, int c, int stride, int chunks,
                                                  float (&acc)[rows_per_warp][M]) {
#pragma unroll
  for (int u = 0; u < unroll; ++u) {
    const int cu = c + u * stride;
    if (cu >= chunks) break;
    float wf[rows_per_warp][8];
#pragma unroll
    for (int r = 0; r < rows_per_warp; ++r) widen_bf16x8(weight(u, r), wf[r]);
#pragma unroll
    for (int b = 0; b < M; ++b) {
      float xf[8];
      widen_bf16x8(xs[b * chunks + cu], xf);
#pragma unroll
      for (int r = 0; r < rows_per_warp; ++r)
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[r][b] = fmaf(wf[r][e], xf[e], acc[r][b]);
    }
  }
}

static __device__ __forceinline__ void store(float* y, float v) { *y = v; }
static __device__ __forceinline__ void store(__nv_bfloat16* y, float v) { *y = __float2bfloat16(v); }

// x's rows into shared memory, normalised from `in` on the way (see gemv_norm).
template <int M>
static __device__ void stage_normed(const gemv_norm& in, int k, __nv_bfloat16* xs) {
  static_assert(threads == rms_norm_block, "the norm's sums must be rms_norm's");
  __shared__ float warp_sums[warps];
  const bool first = blockIdx.x == 0;
  for (int b = 0; b < M; ++b) {
    const size_t at = size_t(b) * k;
    rms_norm_row<threads>(in.add == nullptr ? nullptr : in.add + at, in.residual + at, in.weight, in.eps, k, warp_sums,
                          [&](int i, float v, __nv_bfloat16 x) {
                            xs[at + i] = x;
                            if (!first) return;
                            in.residual_out[at + i] = v;
                            if (in.normed_out != nullptr) in.normed_out[at + i] = x;
                          });
  }
}

// Warp `warp` of a block takes k part `warp % parts` (chunks part * 32 + lane + s * parts * 32
// for s = 0, 1, ...) of rows_per_warp consecutive rows; the `parts` warps of a row group
// meet in shared memory, where their sums are added in part order. The registers allow
// three blocks per SM up to M = 3; more rows of x would spill there, so two. With Normed
// x comes from `norm` instead; with Prefetched every weight chunk of the thread is copied to
// shared memory (after x) before the wait.
template <int M, class Out, bool Normed, bool Prefetched>
static __global__ void __launch_bounds__(threads, M <= 3 ? 3 : 2)
    gemv_kernel(const uint4* x, int chunks, const uint4* w, int n, int parts, Out* y, gemv_norm norm) {
  extern __shared__ uint4 xs[];  // [M][chunks]: the input rows; then, prefetched, the weights
  __shared__ float partial[warps][M * rows_per_warp];
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  const int groups = warps / parts;
  const int row0 = (int(blockIdx.x) * groups + warp / parts) * rows_per_warp;
  const uint4* rows[rows_per_warp];
  // Rows past n re-read the last row; their sums are dropped.
#pragma unroll
  for (int r = 0; r < rows_per_warp; ++r) rows[r] = w + size_t(min(row0 + r, n - 1)) * chunks;
  const int stride = parts * 32;
  int c = warp % parts * 32 + lane;
  // Chunk j of row r of this thread, prefetched: consecutive threads, consecutive slots.
  uint4* staged = xs + M * chunks;
  auto slot = [&](int j, int r) -> uint4& { return staged[(j * rows_per_warp + r) * threads + int(threadIdx.x)]; };
  uint4 v[unroll][rows_per_warp];
  if constexpr (Prefetched) {
    for (int j = 0; c + j * stride < chunks; ++j)
#pragma unroll
      for (int r = 0; r < rows_per_warp; ++r) copy_16(&slot(j, r), rows[r] + c + j * stride);
    commit_copies();
  } else {
    // The first weights are in flight while the kernel before finishes and x is staged.
    load_weights(rows, c, stride, chunks, v);
  }
  begin_dependent();
  if constexpr (Normed)
    stage_normed<M>(norm, chunks * 8, reinterpret_cast<__nv_bfloat16*>(xs));
  else
    for (int i = int(threadIdx.x); i < M * chunks; i += threads) xs[i] = __ldg(x + i);
  if constexpr (Prefetched) wait_copies<0>();  // this thread's own chunks: no barrier needed
  __syncthreads();
  float acc[rows_per_warp][M] = {};
  for (int j = 0;; j += unroll) {
    if constexpr (Prefetched)
      accumulate<M>([&](int u, int r) { return slot(j + u, r); }, xs, c, stride, chunks, acc);
    else
      accumulate<M>([&](int u, int r) { return v[u][r]; }, xs, c, stride, chunks, acc);
    c += unroll * stride;
    if (c >= chunks) break;
    if constexpr (!Prefetched) load_weights(rows, c, stride, chunks, v);
  }
#pragma unroll
  for (int r = 0; r < rows_per_warp; ++r)
#pragma unroll
    for (int b = 0; b < M; ++b)
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2) acc[r][b] += __shfl_xor_sync(0xffffffffu, acc[r][b], offset);
  if (lane == 0)
#pragma unroll
    for (int b = 0; b < M; ++b)
#pragma unroll
      for (int r = 0; r < rows_per_warp; ++r) partial[warp][b * rows_per_warp + r] = acc[r][b];
  __syncthreads();
  const int t = int(threadIdx.x);
  if (t >= groups * M * rows_per_warp) return;
  const int g = t / (M * rows_per_warp), j = t % (M * rows_per_warp);
  const int row = (int(blockIdx.x) * groups + g) * rows_per_warp + j % rows_per_warp;
  if (row >= n) return;
  float sum = partial[g * parts][j];
  for (int p = 1; p < parts; ++p) sum += partial[g * parts + p][j];
  store(y + size_t(j / rows_per_warp) * n + row, sum);
}

// Rows with few outputs split k over up to all the warps of a block. A function of n only,
// so it never changes a row's summation order between batch sizes.
static int k_parts(int n) {
  int parts = 1;
  while (parts < warps && int64_t(n) * parts < target_pieces) parts *= 2;
  return parts;
}

// Bytes of shared memory a block of the prefetching kernel needs for rows of k; 0 where
// a thread's weight chunks are more than max_prefetched (the kernel then streams them).
static size_t prefetch_bytes(int n, int k) {
  const int chunks = k / 8, per_row = (chunks + k_parts(n) * 32 - 1) / (k_parts(n) * 32);
  return per_row * rows_per_warp <= max_prefetched ? size_t(per_row) * rows_per_warp * threads * 16 : 0;
}

// norm null: x as it is; otherwise x from *norm (gemv_normed).
template <int M, class Out>
static void launch(const __nv_bfloat16* x, const gemv_norm* norm, int k, const __nv_bfloat16* w, int n, Out* y,
                   cudaStream_t stream) {
  const int parts = k_parts(n);
  const int rows_per_block = warps / parts * rows_per_warp;
  const size_t prefetched = prefetch_bytes(n, k);
  auto* kernel = norm != nullptr
                     ? (prefetched > 0 ? gemv_kernel<M, Out, true, true> : gemv_kernel<M, Out, true, false>)
                     : (prefetched > 0 ? gemv_kernel<M, Out, false, true> : gemv_kernel<M, Out, false, false>);
  // Always the largest size: the attribute is per kernel, so a smaller k must not shrink it
  // under another thread's launch.
  TROUPE_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           int(gemv_max_x_elements * sizeof(__nv_bfloat16) + size_t(max_prefetched) * threads * 16)));
  const size_t shared = size_t(M) * k * sizeof(__nv_bfloat16) + prefetched;
  launch_dependent(kernel, (n + rows_per_block - 1) / rows_per_block, threads, shared, stream,
                   reinterpret_cast<const uint4*>(x), k / 8, reinterpret_cast<const uint4*>(w), n, parts, y,
                   norm != nullptr ? *norm : gemv_norm{});
}

template <int M, class Out>
static void launch_rows(const __nv_bfloat16* x, const gemv_norm* norm, int m, int k, const __nv_bfloat16* w, int n,
                        Out* y, cudaStream_t stream) {
  if (m == M)
    launch<M>(x, norm, k, w, n, y, stream);
  else if constexpr (M < gemv_max_rows)
    launch_rows<M + 1>(x, norm, m, k, w, n, y, stream);
}

static void launch_any(const __nv_bfloat16* x, const gemv_norm* norm, int m, int k, const __nv_bfloat16* w, int n,
                       dtype y_type, void* y, cudaStream_t stream) {
  TROUPE_CHECK(y_type == dtype::f32 || y_type == dtype::bf16, "output must be fp32 or bf16");
  if (y_type == dtype::f32)
    launch_rows<1>(x, norm, m, k, w, n, static_cast<float*>(y), stream);
  else
    launch_rows<1>(x, norm, m, k, w, n, static_cast<__nv_bfloat16*>(y), stream);
}

bool gemv_fits(int m, int k, const __nv_bfloat16* x, const __nv_bfloat16* w) {
  return gemv_normed_fits(m, k, w) && uintptr_t(x) % 16 == 0;
}

bool gemv_normed_fits(int m, int k, const __nv_bfloat16* w) {
  return m >= 1 && m <= gemv_max_rows && k > 0 && k % 8 == 0 && size_t(m) * size_t(k) <= gemv_max_x_elements &&
         uintptr_t(w) % 16 == 0;
}

void gemv(const __nv_bfloat16* x, int m, int k, const __nv_bfloat16* w, int n, dtype y_type, void* y,
          cudaStream_t stream) {
  TROUPE_CHECK(m >= 0 && n > 0, "bad shape");
  if (m == 0) return;
  TROUPE_CHECK(gemv_fits(m, k, x, w), "gemv takes m <= 8, k a multiple of 8, m * k <= 65536, 16-byte aligned x and w");
  launch_any(x, nullptr, m, k, w, n, y_type, y, stream);
}

void gemv_normed(const gemv_norm& in, int m, int k, const __nv_bfloat16* w, int n, dtype y_type, void* y,
                 cudaStream_t stream) {
  TROUPE_CHECK(m >= 0 && n > 0, "bad shape");
  if (m == 0) return;
  TROUPE_CHECK(gemv_normed_fits(m, k, w), "gemv takes m <= 8, k a multiple of 8, m * k <= 65536, 16-byte aligned w");
  TROUPE_CHECK(
      in.residual != nullptr && in.weight != nullptr && in.residual_out != nullptr && in.residual_out != in.residual,
      "a normalising gemv needs the residual, the weight and another residual to write");
  launch_any(nullptr, &in, m, k, w, n, y_type, y, stream);
}

}  // namespace troupe::cuda
