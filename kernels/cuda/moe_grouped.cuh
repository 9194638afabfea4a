#pragma once
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/moe_align.cuh"

namespace troupe::cuda {

// moe_grouped's scratch for a plan of R rows (plan.max_tiles * plan.tile_rows) and P =
// tokens * k pairs: device pointers, 16-byte aligned.
struct moe_grouped_scratch {
  int capacity;          // R, at least the plan's rows
  __nv_bfloat16* rows;   // [R, hidden]: each pair's x row, then its expert's output
  __nv_bfloat16* gate;   // [R, inter]: the gate projections, then the SwiGLU activations
  __nv_bfloat16* up;     // [R, inter]: the up projections
  int* row_of_pair;      // [P]
  void** matrices;       // [9 * local_experts]: the GEMMs' matrix addresses, for cuBLAS
  int* expert_of_group;  // [local_experts]: the local expert of each used expert's GEMMs
};

// fused_moe's sum for a large batch through cuBLAS, given moe_align's plan of it (any
// tile height): each pair's x row is gathered into its expert's rows, then per expert
// with c > 0 pairs gate, up [c, inter] = rows [c, hidden] * w13 parts^T (bf16 out), act =
// silu(gate) * up (fp32, rounded to bf16), rows [c, hidden] = act * w2^T (bf16 out), and
// out[t] = sum over local j of weights[t, j] * rows[pair (t, j)] in fp32 in j order,
// rounded once to bf16 (zeros for a token with no local expert). When the busiest expert
// has at most twice the mean count and its count times the used experts fits R, every
// expert's rows are padded to that count and the GEMMs are cuBLAS's batched ones (its
// Hopper kernels); otherwise they are its grouped ones, which take each count as it is
// but run warp-level MMA only. The GEMMs accumulate in fp32 in cuBLAS's order, which may
// depend on the counts, so a token's bits depend on the rest of the batch (within bf16
// rounding). The expert counts
// are copied to the host: the call waits for `stream`, which must be the handle's stream
// and not capturing. Shapes as fused_moe's.
void moe_grouped(cublasHandle_t cublas, const __nv_bfloat16* x, int tokens, int hidden,
                 const int* chosen, const float* weights, int k, const __nv_bfloat16* w13,
                 const __nv_bfloat16* w2, int inter, int first_expert, int last_expert,
                 const moe_plan& plan, const moe_grouped_scratch& scratch, __nv_bfloat16* out,
                 cudaStream_t stream);

}  // namespace troupe::cuda
