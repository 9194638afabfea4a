#include "kernels/cuda/moe_grouped.cuh"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/swiglu.cuh"

namespace troupe::cuda {

static constexpr int gather_threads = 128;
static constexpr int combine_threads = 256;

// rows[r] = x[p / k] and row_of_pair[p] = r, by a block, 16 bytes per thread.
static __device__ void gather_row(const __nv_bfloat16* x, int hidden, int k, int p, int r, __nv_bfloat16* rows,
                                  int* row_of_pair) {
  if (threadIdx.x == 0) row_of_pair[p] = r;
  const uint4* src = reinterpret_cast<const uint4*>(x + size_t(p / k) * hidden);
  uint4* dst = reinterpret_cast<uint4*>(rows + size_t(r) * hidden);
  for (int i = int(threadIdx.x); i < hidden / 8; i += gather_threads) dst[i] = src[i];
}

// Block r = g * stride + i: pair first + i of piece g's expert, or, past its count, a
// padding row left alone (its outputs are never read).
static __global__ void gather_pieces_kernel(const __nv_bfloat16* x, int hidden, int k, moe_plan plan,
                                            const int2* pieces, int stride, __nv_bfloat16* rows, int* row_of_pair) {
  const int r = int(blockIdx.x);
  const int2 piece = pieces[r / stride];  // (expert, its first pair)
  const int i = piece.y + r % stride;
  if (i < plan.counts[piece.x])
    gather_row(x, hidden, k, plan.sorted_pairs[plan.offsets[piece.x] + i], r, rows, row_of_pair);
}

// Block t: out[t] from its local pairs' expert outputs, 4 adjacent columns per thread.
static __global__ void combine_kernel(const __nv_bfloat16* rows, const int* row_of_pair, const int* chosen,
                                      const float* weights, int k, int hidden, int first_expert, int last_expert,
                                      __nv_bfloat16* out) {
  const size_t t = blockIdx.x;
  for (int c = int(threadIdx.x) * 4; c < hidden; c += combine_threads * 4) {
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int j = 0; j < k; ++j) {
      const size_t p = t * k + j;
      const int e = chosen[p];
      if (e < first_expert || e >= last_expert) continue;
      const float w = weights[p];
      const uint2 packed = *reinterpret_cast<const uint2*>(rows + size_t(row_of_pair[p]) * hidden + c);
      const __nv_bfloat162* halves = reinterpret_cast<const __nv_bfloat162*>(&packed);
      const float2 lo = __bfloat1622float2(halves[0]), hi = __bfloat1622float2(halves[1]);
      sum.x += w * lo.x, sum.y += w * lo.y, sum.z += w * hi.x, sum.w += w * hi.y;
    }
    uint2 packed;
    __nv_bfloat162* halves = reinterpret_cast<__nv_bfloat162*>(&packed);
    halves[0] = __floats2bfloat162_rn(sum.x, sum.y);
    halves[1] = __floats2bfloat162_rn(sum.z, sum.w);
    *reinterpret_cast<uint2*>(out + t * hidden + c) = packed;
  }
}

// The batched GEMMs' shape: each used expert's pairs cut into pieces of `stride` rows (the
// last one padded), so that one GEMM shape serves them all however the routing is skewed.
struct batch_pieces {
  std::vector<int2> pieces;  // (local expert, its first pair in the piece)
  int stride = 0;
};

// The stride of the pieces grows by this many rows above 64: cuBLAS's Hopper kernels
// compute rows in tiles of 64 or 128 there, so a stride just past a multiple of 64 pays
// for the rest of a tile in every piece.
static constexpr int stride_step = 64;

// The pieces for the plan's expert counts, which come to the host (the stream waits). The
// stride is the one, from the used experts' mean count up to the busiest one's (one piece
// an expert), that pads the least (the longest of equals): at least the mean keeps the
// pieces at most two an expert, and the rows fit `capacity`. At 4,096 tokens of the
// Qwen3-30B-A3B shape the random-weight router sends some experts over twice the mean
// count, where one piece an expert more than doubled the rows and cuBLAS's grouped GEMMs,
// which take any counts, run warp-level MMA only (ncu's cutlass_80_..._grouped).
static batch_pieces cut_into_pieces(const moe_plan& plan, int local_experts, int capacity, cudaStream_t stream) {
  std::vector<int> counts(size_t(local_experts), 0);
  TROUPE_CUDA_CHECK(
      cudaMemcpyAsync(counts.data(), plan.counts, sizeof(int) * counts.size(), cudaMemcpyDeviceToHost, stream));
  TROUPE_CUDA_CHECK(cudaStreamSynchronize(stream));
  int used = 0, pairs = 0, widest = 0;
  for (int c : counts) used += c > 0, pairs += c, widest = std::max(widest, c);
  batch_pieces b;
  if (used == 0) return b;
  auto padded = [&](int stride) {
    int64_t rows = 0;
    for (int c : counts) rows += int64_t(c + stride - 1) / stride * stride;
    return rows;
  };
  auto next = [](int stride) { return stride < stride_step ? stride + 8 : (stride / stride_step + 1) * stride_step; };
  b.stride = ((pairs + used - 1) / used + 7) / 8 * 8;
  if (b.stride > stride_step) b.stride = (b.stride + stride_step - 1) / stride_step * stride_step;
  int64_t least = padded(b.stride);
  auto consider = [&](int stride) {
    if (const int64_t rows = padded(stride); rows <= least && rows <= capacity) b.stride = stride, least = rows;
  };
  for (int stride = next(b.stride); stride < widest; stride = next(stride)) consider(stride);
  consider((widest + 7) / 8 * 8);  // one piece an expert
  for (int e = 0; e < local_experts; ++e)
    for (int first = 0; first < counts[size_t(e)]; first += b.stride) b.pieces.push_back({e, first});
  return b;
}

// cuBLAS is column-major: row-major out [c, n] = in [c, k] * w [n, k]^T is column-major
// out^T [n, c] = w^T (w read as column-major [k, n], transposed) times in^T, as in
// matmul. Per piece g: gate and up (two entries of the batch), then down.
static void launch(cublasHandle_t cublas, const __nv_bfloat16* x, int tokens, int hidden, const int* chosen,
                   const float* weights, int k, const __nv_bfloat16* w13, const __nv_bfloat16* w2, int inter,
                   int first_expert, int last_expert, const moe_plan& plan, const moe_grouped_scratch& scratch,
                   __nv_bfloat16* out, cudaStream_t stream) {
  const batch_pieces b = cut_into_pieces(plan, last_expert - first_expert, scratch.capacity, stream);
  const int count = int(b.pieces.size()), stride = b.stride;
  if (count > 0) {
    TROUPE_CHECK(count <= 2 * (last_expert - first_expert) && int64_t(count) * stride <= scratch.capacity,
                 "the pieces outgrow moe_grouped's scratch");
    const size_t g2 = size_t(2) * count;
    std::vector<const void*> matrices(size_t(9) * count);
    const void** gate_up_w = matrices.data();
    const void** gate_up_in = gate_up_w + g2;
    const void** gate_up_out = gate_up_in + g2;
    const void** down_w = gate_up_out + g2;
    const void** down_in = down_w + count;
    const void** down_out = down_in + count;
    for (int g = 0; g < count; ++g) {
      const size_t e = size_t(b.pieces[size_t(g)].x), row = size_t(g) * stride;  // w13 and w2 hold local experts
      const __nv_bfloat16* w = w13 + e * 2 * inter * hidden;
      gate_up_w[2 * g] = w;
      gate_up_w[2 * g + 1] = w + size_t(inter) * hidden;
      gate_up_in[2 * g] = gate_up_in[2 * g + 1] = scratch.rows + row * hidden;
      gate_up_out[2 * g] = scratch.gate + row * inter;
      gate_up_out[2 * g + 1] = scratch.up + row * inter;
      down_w[g] = w2 + e * hidden * inter;
      down_in[g] = scratch.gate + row * inter;
      down_out[g] = scratch.rows + row * hidden;
    }
    TROUPE_CUDA_CHECK(cudaMemcpyAsync(scratch.matrices, matrices.data(), sizeof(void*) * matrices.size(),
                                      cudaMemcpyHostToDevice, stream));
    TROUPE_CUDA_CHECK(cudaMemcpyAsync(scratch.pieces, b.pieces.data(), sizeof(int2) * b.pieces.size(),
                                      cudaMemcpyHostToDevice, stream));
    gather_pieces_kernel<<<count * stride, gather_threads, 0, stream>>>(x, hidden, k, plan, scratch.pieces, stride,
                                                                        scratch.rows, scratch.row_of_pair);
    TROUPE_CUDA_CHECK(cudaGetLastError());
    void* const* device = scratch.matrices;
    const float one = 1.0f, zero = 0.0f;
    TROUPE_CUDA_CHECK(cublasGemmBatchedEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, inter, stride, hidden, &one, device,
                                          CUDA_R_16BF, hidden, device + g2, CUDA_R_16BF, hidden, &zero, device + 2 * g2,
                                          CUDA_R_16BF, inter, int(g2), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    swiglu(scratch.gate, scratch.up, int64_t(count) * stride * inter, scratch.gate, stream);
    TROUPE_CUDA_CHECK(cublasGemmBatchedEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, hidden, stride, inter, &one,
                                          device + 3 * g2, CUDA_R_16BF, inter, device + 3 * g2 + count, CUDA_R_16BF,
                                          inter, &zero, device + 3 * g2 + 2 * count, CUDA_R_16BF, hidden, count,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  combine_kernel<<<tokens, combine_threads, 0, stream>>>(scratch.rows, scratch.row_of_pair, chosen, weights, k, hidden,
                                                         first_expert, last_expert, out);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

void moe_grouped(cublasHandle_t cublas, const __nv_bfloat16* x, int tokens, int hidden, const int* chosen,
                 const float* weights, int k, const __nv_bfloat16* w13, const __nv_bfloat16* w2, int inter,
                 int first_expert, int last_expert, const moe_plan& plan, const moe_grouped_scratch& scratch,
                 __nv_bfloat16* out, cudaStream_t stream) {
  TROUPE_CHECK(cublas != nullptr, "moe_grouped needs a cuBLAS handle");
  TROUPE_CHECK(tokens >= 0 && k > 0 && first_expert >= 0 && last_expert > first_expert, "bad shape");
  TROUPE_CHECK(hidden > 0 && hidden % 16 == 0, "hidden must be a positive multiple of 16");
  TROUPE_CHECK(inter > 0 && inter % 16 == 0, "inter must be a positive multiple of 16");
  TROUPE_CHECK(plan.tile_rows > 0, "moe_grouped takes moe_align's plan");
  for (const void* p : {static_cast<const void*>(x), static_cast<const void*>(w13), static_cast<const void*>(w2),
                        static_cast<const void*>(out), static_cast<const void*>(scratch.rows),
                        static_cast<const void*>(scratch.gate), static_cast<const void*>(scratch.up)})
    TROUPE_CHECK(uintptr_t(p) % 16 == 0, "pointers must be 16-byte aligned");
  cudaStream_t handle_stream;
  TROUPE_CUDA_CHECK(cublasGetStream(cublas, &handle_stream));
  TROUPE_CHECK(handle_stream == stream, "the cuBLAS handle must run on `stream`");
  cudaStreamCaptureStatus capture;
  TROUPE_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  TROUPE_CHECK(capture == cudaStreamCaptureStatusNone, "moe_grouped waits for the stream, which cannot be captured");
  if (tokens == 0) return;
  launch(cublas, x, tokens, hidden, chosen, weights, k, w13, w2, inter, first_expert, last_expert, plan, scratch, out,
         stream);
}

}  // namespace troupe::cuda
