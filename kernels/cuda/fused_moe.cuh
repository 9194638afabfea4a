#pragma once
#include <cstddef>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/moe_gemv.cuh"

namespace troupe::cuda {

// Bytes of scratch fused_moe needs for up to max_tokens tokens: the caller owns it (256-byte
// aligned) so a captured step allocates nothing.
size_t fused_moe_workspace_bytes(int max_tokens, int k, int local_experts, int hidden, int inter);

// The routed experts of a Qwen3-MoE layer on this device's experts [first_expert,
// last_expert), on `stream`:
//   out[t] = sum over j < k with chosen[t, j] local of
//            weights[t, j] * down_e(silu(gate_e(x[t])) * up_e(x[t])),  e = chosen[t, j]
// with fp32 dot products, the SwiGLU product rounded to bf16 (as torch does between the
// projections), the sum in fp32 in j order rounded once to bf16; a token with no local
// expert gets zeros. x and out [tokens, hidden], chosen (global ids) and weights [tokens,
// k]; w13 [local_experts, 2 * inter, hidden] holds each expert's gate_proj rows then its
// up_proj rows, w2 [local_experts, hidden, inter] its down_proj. hidden and inter are
// multiples of 16, tokens at most the workspace's max_tokens. Device pointers, 16-byte
// aligned.
//
// With cublas null it never syncs and its grids are fixed by the shape: graph-capturable.
// It is then deterministic, and a token's output bits do not depend on the rest of a
// batch of up to moe_gemv_pairs pairs (batch 1 to 8 of Qwen3-30B-A3B, as cuda::matmul's
// gemv rows: moe_gemv); larger batches sum each dot product in another order (tensor-core
// tiles), within bf16 rounding.
// With a cuBLAS handle (its stream `stream`), a batch of at least 32 pairs per local
// expert goes through cuBLAS's batched GEMMs instead (moe_grouped): much faster for
// prefill, but it copies the expert counts to the host and waits for the stream (never
// pass a handle while capturing), it rounds the gate and up projections and each expert's
// output to bf16 as torch does, and cuBLAS picks its summation order by shape, so a
// token's bits depend on the batch, within bf16 rounding of the graph-safe result.
void fused_moe(const __nv_bfloat16* x, int tokens, int hidden, const int* chosen, const float* weights, int k,
               const __nv_bfloat16* w13, const __nv_bfloat16* w2, int inter, int first_expert, int last_expert,
               void* workspace, __nv_bfloat16* out, cudaStream_t stream, cublasHandle_t cublas);

// fused_moe's work on one expert-parallel rank: experts [first_expert, last_expert) of the
// model's num_experts (w13 and w2 hold these). For each local pair p = t * k + j it writes
// the term fused_moe adds for it, y[p] = weights[p] * down_e(silu(gate_e(x[t])) *
// up_e(x[t])) in fp32, [tokens * k, hidden] (16-byte aligned; other pairs' rows are left as
// they were), computed by the kernels fused_moe without a cuBLAS handle picks for the batch
// over all num_experts experts: moe_gemv up to moe_gemv_pairs pairs, else the 16- or
// 64-row tiles by the pairs per expert of the whole model. So every rank's rows summed
// in j order (moe_combine_ranks) are fused_moe's bits when it takes no cuBLAS path.
// Never syncs: graph-capturable. workspace: fused_moe_workspace_bytes for the local experts.
void fused_moe_rows(const __nv_bfloat16* x, int tokens, int hidden, const int* chosen, const float* weights, int k,
                    const __nv_bfloat16* w13, const __nv_bfloat16* w2, int inter, int first_expert, int last_expert,
                    int num_experts, void* workspace, float* y, cudaStream_t stream);

}  // namespace troupe::cuda
