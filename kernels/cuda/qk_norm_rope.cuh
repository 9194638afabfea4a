#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace troupe::cuda {

// Qwen3's per-head RMSNorm of queries and keys followed by rotate-half RoPE, in place:
// q [tokens, heads, head_dim] normed by q_norm, k [tokens, kv_heads, head_dim] by k_norm
// (token rows q_stride and k_stride elements apart: q and k may sit in one fused qkv row)
// (fp32 weights of head_dim), then pairs (i, i + head_dim/2) rotate by
// float(positions[t]) * inv_freq[i], inv_freq[i] = 1 / theta^(2i / head_dim) in fp32 as
// transformers computes it. Same contract as cpu::rms_norm per head then cpu::rope.
// Device pointers (positions too); head_dim even and at most 256.
void qk_norm_rope(__nv_bfloat16* q, __nv_bfloat16* k, const float* q_norm, const float* k_norm,
                  float eps, int tokens, int heads, int kv_heads, int head_dim, int q_stride,
                  int k_stride, const int* positions, float theta, cudaStream_t stream);

}  // namespace troupe::cuda
