#pragma once
#include <cstddef>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

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
// aligned. Deterministic: a token's output does not depend on the rest of the batch. No
// host sync and grids fixed by the shape: graph-capturable.
void fused_moe(const __nv_bfloat16* x, int tokens, int hidden, const int* chosen,
               const float* weights, int k, const __nv_bfloat16* w13, const __nv_bfloat16* w2,
               int inter, int first_expert, int last_expert, void* workspace, __nv_bfloat16* out,
               cudaStream_t stream);

}  // namespace troupe::cuda
