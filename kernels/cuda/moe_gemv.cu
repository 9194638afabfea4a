#include "kernels/cuda/moe_gemv.cuh"

#include <cstdint>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/widen_bf16.cuh"

namespace troupe::cuda {

static constexpr int threads = 256, warps = threads / 32;
static constexpr int rows_per_warp = 4;
// Steps of 16-byte loads per row a lane has in flight. Two keep a kernel at 64 registers,
// four blocks an SM: at batch 1 on the H200 the kernels then keep more bytes in flight
// than with four steps at two blocks an SM (110 registers), which left them latency-bound
// (gate_up 17.5 -> 15.9 us, down 11.9 -> 9.8 us; the decode step 355 -> 376 tok/s).
static constexpr int unroll = 2;
static constexpr int blocks_per_sm = 4;
// moe_gate_up's block: 8 outputs, their 8 gate rows and 8 up rows in four warp row
// groups (gate, gate, up, up), each row's k in two halves.
static constexpr int gate_up_outputs = 8, gate_up_parts = 2;
// moe_down's block: 4 output columns of one token, a warp per pair.
static constexpr int down_outputs = rows_per_warp;

// A lane's weights for one step of dot_rows: unroll chunks of each row, from chunk c.
using step_weights = uint4[unroll][rows_per_warp];

static __device__ __forceinline__ void load_step(const uint4* const (&rows)[rows_per_warp], int c, int stride,
                                                 int chunks, step_weights& v) {
#pragma unroll
  for (int u = 0; u < unroll; ++u)
#pragma unroll
    for (int r = 0; r < rows_per_warp; ++r)
      if (c + u * stride < chunks) v[u][r] = __ldg(rows[r] + c + u * stride);
}

// acc[r] += rows[r] . x over the chunks c0, c0 + stride, ... below `chunks`, each lane's in
// ascending order, then summed across the warp: every lane ends with the warp's sums. v
// holds load_step(rows, c0, ...) on entry, so a caller may load it before the wait.
static __device__ __forceinline__ void dot_rows(const uint4* const (&rows)[rows_per_warp], const uint4* x, int c0,
                                                int stride, int chunks, step_weights& v, float (&acc)[rows_per_warp]) {
  for (int c = c0; c < chunks; c += unroll * stride) {
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      if (c + u * stride >= chunks) break;
      float xf[8];
      widen_bf16x8(x[c + u * stride], xf);
#pragma unroll
      for (int r = 0; r < rows_per_warp; ++r) {
        float wf[8];
        widen_bf16x8(v[u][r], wf);
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[r] = fmaf(wf[e], xf[e], acc[r]);
      }
    }
    load_step(rows, c + unroll * stride, stride, chunks, v);
  }
#pragma unroll
  for (int r = 0; r < rows_per_warp; ++r)
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], offset);
}

// The down rows h0 .. h0 + 3 of expert e, and a lane's first step of them. Both down
// kernels load these before the wait: the picks were written before gate_up began (gate_up
// reads them after its own wait, and only then lets this kernel in), and the weights by
// no kernel, so the first two thirds of a lane's loads overlap gate_up's tail.
struct down_rows {
  const uint4* rows[rows_per_warp];
  step_weights first;
};

static __device__ __forceinline__ void load_down_rows(const uint4* w2, int e, int hidden, int h0, int chunks,
                                                      down_rows& d) {
#pragma unroll
  for (int r = 0; r < rows_per_warp; ++r) d.rows[r] = w2 + (size_t(e) * hidden + h0 + r) * chunks;
  load_step(d.rows, int(threadIdx.x) % 32, 32, chunks, d.first);
}

// Block (output block, pair): act[pair, j] = bf16(silu(gate_j . x) * (up_j . x)) for the
// block's 8 outputs j, x the pair's token row. A pair of another device's expert is left.
static __global__ void __launch_bounds__(threads, blocks_per_sm)
    gate_up_kernel(const uint4* x, int chunks, const int* chosen, int k, const uint4* w13, int inter, int first_expert,
                   int last_expert, __nv_bfloat16* act) {
  __shared__ float partial[warps][rows_per_warp];
  begin_dependent();
  const int pair = int(blockIdx.y), e = chosen[pair];
  if (e < first_expert || e >= last_expert) return;
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  const int group = warp / gate_up_parts, part = warp % gate_up_parts;
  const int j0 = int(blockIdx.x) * gate_up_outputs;
  const int first_row = (group < 2 ? 0 : inter) + j0 + group % 2 * rows_per_warp;
  const uint4* expert = w13 + size_t(e - first_expert) * 2 * inter * chunks;
  const uint4* rows[rows_per_warp];
#pragma unroll
  for (int r = 0; r < rows_per_warp; ++r) rows[r] = expert + size_t(first_row + r) * chunks;
  float acc[rows_per_warp] = {};
  step_weights v;
  load_step(rows, part * 32 + lane, gate_up_parts * 32, chunks, v);
  dot_rows(rows, x + size_t(pair / k) * chunks, part * 32 + lane, gate_up_parts * 32, chunks, v, acc);
  if (lane == 0)
#pragma unroll
    for (int r = 0; r < rows_per_warp; ++r) partial[warp][r] = acc[r];
  __syncthreads();
  const int i = int(threadIdx.x);
  if (i >= gate_up_outputs) return;
  auto sum = [&](int g) {  // row i % 4 of row group g, its k halves in order
    return partial[g * gate_up_parts][i % rows_per_warp] + partial[g * gate_up_parts + 1][i % rows_per_warp];
  };
  const float gate = sum(i / rows_per_warp), up = sum(2 + i / rows_per_warp);
  act[size_t(pair) * inter + j0 + i] = __float2bfloat16(gate / (1.0f + expf(-gate)) * up);
}

// Block (output block, token): out[t, h] = bf16(sum over the token's local pairs j, in j
// order, of weights[j] * (down_e[h] . act[j])) for the block's 4 columns h; a token with no
// local expert gets zeros.
static __global__ void __launch_bounds__(threads, blocks_per_sm)
    down_kernel(const uint4* act, int chunks, const int* chosen, const float* weights, int k, const uint4* w2,
                int hidden, int first_expert, int last_expert, __nv_bfloat16* out) {
  __shared__ float partial[moe_gemv_pairs][down_outputs];
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  const int t = int(blockIdx.y), h0 = int(blockIdx.x) * down_outputs;
  auto local = [&](int e) { return e >= first_expert && e < last_expert; };
  down_rows d;
  const int first_e = warp < k ? chosen[t * k + warp] : -1;
  if (local(first_e)) load_down_rows(w2, first_e - first_expert, hidden, h0, chunks, d);
  begin_dependent();
  for (int j = warp; j < k; j += warps) {
    const int pair = t * k + j, e = chosen[pair];
    if (!local(e)) continue;
    if (j != warp) load_down_rows(w2, e - first_expert, hidden, h0, chunks, d);
    float acc[rows_per_warp] = {};
    dot_rows(d.rows, act + size_t(pair) * chunks, lane, 32, chunks, d.first, acc);
    if (lane == 0)
#pragma unroll
      for (int r = 0; r < rows_per_warp; ++r) partial[j][r] = weights[pair] * acc[r];
  }
  __syncthreads();
  const int i = int(threadIdx.x);
  if (i >= down_outputs) return;
  float sum = 0.0f;
  for (int j = 0; j < k; ++j)
    if (local(chosen[t * k + j])) sum += partial[j][i];
  out[size_t(t) * hidden + h0 + i] = __float2bfloat16(sum);
}

// Block (output block, token): y[pair, h] = weights[pair] * (down_e[h] . act[pair]) for the
// block's 4 columns h of each of the token's local pairs: down_kernel's products, each
// computed as there, before it sums them.
static __global__ void __launch_bounds__(threads, blocks_per_sm)
    down_rows_kernel(const uint4* act, int chunks, const int* chosen, const float* weights, int k, const uint4* w2,
                     int hidden, int first_expert, int last_expert, float* y) {
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  const int t = int(blockIdx.y), h0 = int(blockIdx.x) * down_outputs;
  auto local = [&](int e) { return e >= first_expert && e < last_expert; };
  down_rows d;
  const int first_e = warp < k ? chosen[t * k + warp] : -1;
  if (local(first_e)) load_down_rows(w2, first_e - first_expert, hidden, h0, chunks, d);
  begin_dependent();
  for (int j = warp; j < k; j += warps) {
    const int pair = t * k + j, e = chosen[pair];
    if (!local(e)) continue;
    if (j != warp) load_down_rows(w2, e - first_expert, hidden, h0, chunks, d);
    float acc[rows_per_warp] = {};
    dot_rows(d.rows, act + size_t(pair) * chunks, lane, 32, chunks, d.first, acc);
    if (lane == 0)
#pragma unroll
      for (int r = 0; r < rows_per_warp; ++r) y[size_t(pair) * hidden + h0 + r] = weights[pair] * acc[r];
  }
}

static void check_shape(const __nv_bfloat16* x, int tokens, int hidden, int k, const __nv_bfloat16* w13,
                        const __nv_bfloat16* w2, int inter, int first_expert, int last_expert,
                        const __nv_bfloat16* act) {
  TROUPE_CHECK(tokens >= 0 && k > 0 && tokens * k <= moe_gemv_pairs, "moe_gemv takes at most 64 pairs");
  TROUPE_CHECK(hidden > 0 && hidden % 8 == 0 && inter > 0 && inter % 8 == 0,
               "hidden and inter must be positive multiples of 8");
  TROUPE_CHECK(first_expert >= 0 && last_expert > first_expert, "bad expert range");
  TROUPE_CHECK(
      uintptr_t(x) % 16 == 0 && uintptr_t(w13) % 16 == 0 && uintptr_t(w2) % 16 == 0 && uintptr_t(act) % 16 == 0,
      "pointers must be 16-byte aligned");
}

static void launch_gate_up(const __nv_bfloat16* x, int tokens, int hidden, const int* chosen, int k,
                           const __nv_bfloat16* w13, int inter, int first_expert, int last_expert, __nv_bfloat16* act,
                           cudaStream_t stream) {
  launch_dependent(gate_up_kernel, dim3(inter / gate_up_outputs, tokens * k), threads, 0, stream,
                   reinterpret_cast<const uint4*>(x), hidden / 8, chosen, k, reinterpret_cast<const uint4*>(w13), inter,
                   first_expert, last_expert, act);
}

void moe_gemv(const __nv_bfloat16* x, int tokens, int hidden, const int* chosen, const float* weights, int k,
              const __nv_bfloat16* w13, const __nv_bfloat16* w2, int inter, int first_expert, int last_expert,
              __nv_bfloat16* act, __nv_bfloat16* out, cudaStream_t stream) {
  check_shape(x, tokens, hidden, k, w13, w2, inter, first_expert, last_expert, act);
  if (tokens == 0) return;
  launch_gate_up(x, tokens, hidden, chosen, k, w13, inter, first_expert, last_expert, act, stream);
  launch_dependent(down_kernel, dim3(hidden / down_outputs, tokens), threads, 0, stream,
                   reinterpret_cast<const uint4*>(act), inter / 8, chosen, weights, k,
                   reinterpret_cast<const uint4*>(w2), hidden, first_expert, last_expert, out);
}

void moe_gemv_rows(const __nv_bfloat16* x, int tokens, int hidden, const int* chosen, const float* weights, int k,
                   const __nv_bfloat16* w13, const __nv_bfloat16* w2, int inter, int first_expert, int last_expert,
                   __nv_bfloat16* act, float* y, cudaStream_t stream) {
  check_shape(x, tokens, hidden, k, w13, w2, inter, first_expert, last_expert, act);
  TROUPE_CHECK(uintptr_t(y) % 16 == 0, "pointers must be 16-byte aligned");
  if (tokens == 0) return;
  launch_gate_up(x, tokens, hidden, chosen, k, w13, inter, first_expert, last_expert, act, stream);
  launch_dependent(down_rows_kernel, dim3(hidden / down_outputs, tokens), threads, 0, stream,
                   reinterpret_cast<const uint4*>(act), inter / 8, chosen, weights, k,
                   reinterpret_cast<const uint4*>(w2), hidden, first_expert, last_expert, y);
}

}  // namespace troupe::cuda
