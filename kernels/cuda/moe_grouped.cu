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

// Block r: row r of the plan's layout, for the grouped GEMMs; padding rows (p = -1) are
// left alone.
static __global__ void gather_kernel(const __nv_bfloat16* x, int hidden, int k,
                                     const int* sorted_pairs, __nv_bfloat16* rows,
                                     int* row_of_pair) {
  const int r = int(blockIdx.x);
  const int p = sorted_pairs[r];
  if (p >= 0) gather_row(x, hidden, k, p, r, rows, row_of_pair);
}

// Block r = g * stride + i: pair i of used expert g, for the batched GEMMs; rows past the
// expert's count are left alone (their outputs are never read).
static __global__ void gather_padded_kernel(const __nv_bfloat16* x, int hidden, int k, moe_plan plan,
                                            const int* expert_of_group, int stride, __nv_bfloat16* rows,
                                            int* row_of_pair) {
  const int r = int(blockIdx.x), e = expert_of_group[r / stride], i = r % stride;
  if (i < plan.counts[e]) gather_row(x, hidden, k, plan.sorted_pairs[plan.offsets[e] + i], r, rows, row_of_pair);
}

// Block t: out[t] from its local pairs' expert outputs, 4 adjacent columns per thread.
static __global__ void combine_kernel(const __nv_bfloat16* rows, const int* row_of_pair,
                                      const int* chosen, const float* weights, int k, int hidden,
                                      int first_expert, int last_expert, __nv_bfloat16* out) {
  const size_t t = blockIdx.x;
  for (int c = int(threadIdx.x) * 4; c < hidden; c += combine_threads * 4) {
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int j = 0; j < k; ++j) {
      const size_t p = t * k + j;
      const int e = chosen[p];
      if (e < first_expert || e >= last_expert) continue;
      const float w = weights[p];
      const uint2 packed =
          *reinterpret_cast<const uint2*>(rows + size_t(row_of_pair[p]) * hidden + c);
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

// The experts with pairs, their pair counts and first rows in moe_align's layout.
struct used_experts {
  std::vector<int> ids, counts, first_rows;
  int rows = 0;   // all experts' rows, padding included
  int pairs = 0;  // their pairs
  int widest = 0;
};

static used_experts host_counts(const moe_plan& plan, int local_experts, cudaStream_t stream) {
  std::vector<int> counts(size_t(local_experts), 0);
  TROUPE_CUDA_CHECK(cudaMemcpyAsync(counts.data(), plan.counts, sizeof(int) * counts.size(),
                                    cudaMemcpyDeviceToHost, stream));
  TROUPE_CUDA_CHECK(cudaStreamSynchronize(stream));
  used_experts used;
  for (int e = 0; e < local_experts; ++e) {
    const int c = counts[size_t(e)];
    if (c > 0) {
      used.ids.push_back(e);
      used.counts.push_back(c);
      used.first_rows.push_back(used.rows);
      used.pairs += c;
      used.widest = std::max(used.widest, c);
    }
    used.rows += (c + plan.tile_rows - 1) / plan.tile_rows * plan.tile_rows;
  }
  return used;
}

// The batched GEMMs' rows per expert (the busiest expert's count, a multiple of 8), or 0
// when the grouped ones do better: padding every expert that far would more than double
// the rows (the batched kernels are about twice as fast), or not fit the scratch. On the
// H200 at 4,096 tokens of the Qwen3-30B-A3B shape with random routing, fused_moe takes
// 0.750 ms batched against 1.414 ms grouped.
static int batched_stride(const used_experts& used, int capacity) {
  const int groups = int(used.ids.size()), stride = (used.widest + 7) / 8 * 8;
  const int64_t padded = int64_t(groups) * stride;
  return padded <= capacity && padded <= 2 * int64_t(used.pairs) ? stride : 0;
}

// cuBLAS is column-major: row-major out [c, n] = in [c, k] * w [n, k]^T is column-major
// out^T [n, c] = w^T (w read as column-major [k, n], transposed) times in^T, as in
// matmul. Per expert g: gate and up (two GEMMs of one group, or two entries of the
// batch), then down.
static void launch(cublasHandle_t cublas, const __nv_bfloat16* x, int tokens, int hidden,
                   const int* chosen, const float* weights, int k, const __nv_bfloat16* w13,
                   const __nv_bfloat16* w2, int inter, int first_expert, int last_expert,
                   const moe_plan& plan, const moe_grouped_scratch& scratch, __nv_bfloat16* out,
                   cudaStream_t stream) {
  const used_experts used = host_counts(plan, last_expert - first_expert, stream);
  const int groups = int(used.ids.size());
  if (groups > 0) {
    const int stride = batched_stride(used, scratch.capacity);
    const size_t g2 = size_t(2) * groups;
    std::vector<const void*> matrices(size_t(9) * groups);
    const void** gate_up_w = matrices.data();
    const void** gate_up_in = gate_up_w + g2;
    const void** gate_up_out = gate_up_in + g2;
    const void** down_w = gate_up_out + g2;
    const void** down_in = down_w + groups;
    const void** down_out = down_in + groups;
    for (int g = 0; g < groups; ++g) {
      const size_t e = size_t(used.ids[size_t(g)]);
      const size_t row = stride > 0 ? size_t(g) * stride : size_t(used.first_rows[size_t(g)]);
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
    TROUPE_CUDA_CHECK(cudaMemcpyAsync(scratch.matrices, matrices.data(),
                                      sizeof(void*) * matrices.size(), cudaMemcpyHostToDevice,
                                      stream));
    void* const* device = scratch.matrices;
    const float one = 1.0f, zero = 0.0f;
    if (stride > 0) {
      TROUPE_CUDA_CHECK(cudaMemcpyAsync(scratch.expert_of_group, used.ids.data(), sizeof(int) * used.ids.size(),
                                        cudaMemcpyHostToDevice, stream));
      gather_padded_kernel<<<groups * stride, gather_threads, 0, stream>>>(
          x, hidden, k, plan, scratch.expert_of_group, stride, scratch.rows, scratch.row_of_pair);
      TROUPE_CUDA_CHECK(cudaGetLastError());
      TROUPE_CUDA_CHECK(cublasGemmBatchedEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, inter, stride, hidden, &one, device,
                                            CUDA_R_16BF, hidden, device + g2, CUDA_R_16BF, hidden, &zero,
                                            device + 2 * g2, CUDA_R_16BF, inter, int(g2), CUBLAS_COMPUTE_32F,
                                            CUBLAS_GEMM_DEFAULT));
      swiglu(scratch.gate, scratch.up, int64_t(groups) * stride * inter, scratch.gate, stream);
      TROUPE_CUDA_CHECK(cublasGemmBatchedEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, hidden, stride, inter, &one,
                                            device + 3 * g2, CUDA_R_16BF, inter, device + 3 * g2 + groups,
                                            CUDA_R_16BF, inter, &zero, device + 3 * g2 + 2 * groups, CUDA_R_16BF,
                                            hidden, groups, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    } else {
      gather_kernel<<<used.rows, gather_threads, 0, stream>>>(x, hidden, k, plan.sorted_pairs,
                                                              scratch.rows, scratch.row_of_pair);
      TROUPE_CUDA_CHECK(cudaGetLastError());
      const size_t g = size_t(groups);
      const std::vector<cublasOperation_t> transposed(g, CUBLAS_OP_T), plain(g, CUBLAS_OP_N);
      const std::vector<int> inters(g, inter), hiddens(g, hidden), twos(g, 2), ones(g, 1);
      const std::vector<float> alpha(g, 1.0f), beta(g, 0.0f);
      TROUPE_CUDA_CHECK(cublasGemmGroupedBatchedEx(
          cublas, transposed.data(), plain.data(), inters.data(), used.counts.data(),
          hiddens.data(), alpha.data(), device, CUDA_R_16BF, hiddens.data(), device + g2,
          CUDA_R_16BF, hiddens.data(), beta.data(), device + 2 * g2, CUDA_R_16BF, inters.data(),
          groups, twos.data(), CUBLAS_COMPUTE_32F));
      swiglu(scratch.gate, scratch.up, int64_t(used.rows) * inter, scratch.gate, stream);
      TROUPE_CUDA_CHECK(cublasGemmGroupedBatchedEx(
          cublas, transposed.data(), plain.data(), hiddens.data(), used.counts.data(),
          inters.data(), alpha.data(), device + 3 * g2, CUDA_R_16BF, inters.data(),
          device + 3 * g2 + g, CUDA_R_16BF, inters.data(), beta.data(), device + 3 * g2 + 2 * g,
          CUDA_R_16BF, hiddens.data(), groups, ones.data(), CUBLAS_COMPUTE_32F));
    }
  }
  combine_kernel<<<tokens, combine_threads, 0, stream>>>(scratch.rows, scratch.row_of_pair,
                                                         chosen, weights, k, hidden,
                                                         first_expert, last_expert, out);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

void moe_grouped(cublasHandle_t cublas, const __nv_bfloat16* x, int tokens, int hidden,
                 const int* chosen, const float* weights, int k, const __nv_bfloat16* w13,
                 const __nv_bfloat16* w2, int inter, int first_expert, int last_expert,
                 const moe_plan& plan, const moe_grouped_scratch& scratch, __nv_bfloat16* out,
                 cudaStream_t stream) {
  TROUPE_CHECK(cublas != nullptr, "moe_grouped needs a cuBLAS handle");
  TROUPE_CHECK(tokens >= 0 && k > 0 && first_expert >= 0 && last_expert > first_expert,
               "bad shape");
  TROUPE_CHECK(hidden > 0 && hidden % 16 == 0, "hidden must be a positive multiple of 16");
  TROUPE_CHECK(inter > 0 && inter % 16 == 0, "inter must be a positive multiple of 16");
  TROUPE_CHECK(plan.tile_rows > 0, "moe_grouped takes moe_align's plan");
  for (const void* p : {static_cast<const void*>(x), static_cast<const void*>(w13),
                        static_cast<const void*>(w2), static_cast<const void*>(out),
                        static_cast<const void*>(scratch.rows),
                        static_cast<const void*>(scratch.gate),
                        static_cast<const void*>(scratch.up)})
    TROUPE_CHECK(uintptr_t(p) % 16 == 0, "pointers must be 16-byte aligned");
  cudaStream_t handle_stream;
  TROUPE_CUDA_CHECK(cublasGetStream(cublas, &handle_stream));
  TROUPE_CHECK(handle_stream == stream, "the cuBLAS handle must run on `stream`");
  cudaStreamCaptureStatus capture;
  TROUPE_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  TROUPE_CHECK(capture == cudaStreamCaptureStatusNone,
               "moe_grouped waits for the stream, which cannot be captured");
  if (tokens == 0) return;
  launch(cublas, x, tokens, hidden, chosen, weights, k, w13, w2, inter, first_expert, last_expert,
         plan, scratch, out, stream);
}

}  // namespace troupe::cuda
