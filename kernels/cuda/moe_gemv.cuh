#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace troupe::cuda {

// Batches of at most this many (token, slot) pairs take moe_gemv (batch 1 to 8 of
// Qwen3-30B-A3B, as cuda::matmul's gemv rows).
inline constexpr int moe_gemv_pairs = 64;

// fused_moe's contract for tokens * k <= moe_gemv_pairs, as gemvs: each pair's gate and up
// rows, then each token's down rows for all its pairs, are streamed once with every load
// of a lane in flight at once (tensor-core tiles of 16 pairs would sit mostly empty).
// Two launches, no host sync, graph-capturable; act [tokens * k, inter] bf16 scratch.
// hidden and inter multiples of 8, pointers 16-byte aligned. A token's bits depend on
// its own inputs only, never on the rest of the batch.
void moe_gemv(const __nv_bfloat16* x, int tokens, int hidden, const int* chosen, const float* weights, int k,
              const __nv_bfloat16* w13, const __nv_bfloat16* w2, int inter, int first_expert, int last_expert,
              __nv_bfloat16* act, __nv_bfloat16* out, cudaStream_t stream);

// moe_gemv's products before its sum, for expert parallelism (fused_moe_rows): y[p, h] =
// weights[p] * (down_e[h] . act[p]) in fp32 for each local pair p, computed as moe_gemv
// computes the terms it sums; the other pairs' rows of y [tokens * k, hidden] are left as
// they were. y 16-byte aligned; the rest as moe_gemv.
void moe_gemv_rows(const __nv_bfloat16* x, int tokens, int hidden, const int* chosen, const float* weights, int k,
                   const __nv_bfloat16* w13, const __nv_bfloat16* w2, int inter, int first_expert, int last_expert,
                   __nv_bfloat16* act, float* y, cudaStream_t stream);

}  // namespace troupe::cuda
