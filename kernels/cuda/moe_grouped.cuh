#pragma once
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/moe_align.cuh"

namespace troupe::cuda {

// moe_grouped's scratch for a plan of R rows and P = tokens * k pairs: device pointers,
// 16-byte aligned.
struct moe_grouped_scratch {
  int capacity;         // R, at least 2 P + 64 * local_experts
  __nv_bfloat16* rows;  // [R, hidden]: each pair's x row, then its expert's output
  __nv_bfloat16* gate;  // [R, inter]: the gate projections, then the SwiGLU activations
  __nv_bfloat16* up;    // [R, inter]: the up projections
  int* row_of_pair;     // [P]
  void** matrices;      // [18 * local_experts]: the GEMMs' matrix addresses, for cuBLAS
  int2* pieces;         // [2 * local_experts]: each piece's local expert and first pair
};

// fused_moe's sum for a large batch through cuBLAS, given moe_align's plan of it (any
// tile height): each used expert's pairs are cut into pieces of one stride (the last one
// padded), at least the mean count, each pair's x row is gathered into its piece's
// rows, then per piece gate, up [s, inter] = rows [s, hidden] * w13 parts^T (bf16 out),
// act = silu(gate) * up (fp32, rounded to bf16), rows [s, hidden] = act * w2^T (bf16
// out) as cuBLAS's batched GEMMs (one shape for all, so its Hopper kernels), and out[t] =
// sum over local j of weights[t, j] * rows[pair (t, j)] in fp32 in j order, rounded once
// to bf16 (zeros for a token with no local expert). The GEMMs accumulate in fp32 in
// cuBLAS's order, which may depend on the shape, so a token's bits depend on the rest of
// the batch (within bf16 rounding). The expert counts are copied to the host: the call
// waits for `stream`, which must be the handle's stream and not capturing. Shapes as
// fused_moe's.
void moe_grouped(cublasHandle_t cublas, const __nv_bfloat16* x, int tokens, int hidden, const int* chosen,
                 const float* weights, int k, const __nv_bfloat16* w13, const __nv_bfloat16* w2, int inter,
                 int first_expert, int last_expert, const moe_plan& plan, const moe_grouped_scratch& scratch,
                 __nv_bfloat16* out, cudaStream_t stream);

}  // namespace troupe::cuda
