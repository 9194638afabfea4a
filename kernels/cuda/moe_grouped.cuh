#pragma once
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/moe_align.cuh"

namespace troupe::cuda {

// moe_grouped's scratch for a plan of R rows (plan.max_tiles * plan.tile_rows) and P =
// tokens * k pairs: device pointers, 16-byte aligned.
struct moe_grouped_scratch {
  __nv_bfloat16* rows;  // [R, hidden]: each pair's x row, then its expert's output
  __nv_bfloat16* gate;  // [R, inter]: the gate projections, then the SwiGLU activations
  __nv_bfloat16* up;    // [R, inter]: the up projections
  int* row_of_pair;     // [P]
  void** matrices;      // [9 * local_experts]: the GEMMs' matrix addresses, for cuBLAS
};

// fused_moe's sum for a large batch through cuBLAS grouped GEMMs, given moe_align's plan
// of it (any tile height): each pair's x row is gathered into its expert's rows, then per
// expert with c > 0 pairs gate, up [c, inter] = rows [c, hidden] * w13 parts^T (bf16
// out), act = silu(gate) * up (fp32, rounded to bf16), rows [c, hidden] = act * w2^T (bf16
// out), and out[t] = sum over local j of weights[t, j] * rows[pair (t, j)] in fp32 in j
// order, rounded once to bf16 (zeros for a token with no local expert). The GEMMs
// accumulate in fp32 in cuBLAS's order, which may depend on each expert's count, so a
// token's bits depend on the rest of the batch (within bf16 rounding). The expert counts
// are copied to the host: the call waits for `stream`, which must be the handle's stream
// and not capturing. Shapes as fused_moe's.
void moe_grouped(cublasHandle_t cublas, const __nv_bfloat16* x, int tokens, int hidden,
                 const int* chosen, const float* weights, int k, const __nv_bfloat16* w13,
                 const __nv_bfloat16* w2, int inter, int first_expert, int last_expert,
                 const moe_plan& plan, const moe_grouped_scratch& scratch, __nv_bfloat16* out,
                 cudaStream_t stream);

}  // namespace troupe::cuda
