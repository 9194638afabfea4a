#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace troupe::cuda {

// Where a step's keys (normed and rotated) and values go: the paged bf16 pools laid out as
// [blocks, block_size, kv_heads * head_dim], token t at slot slots[t] = block * block_size +
// offset (as cpu::kv_cache_write places it; negative: nowhere), its value row read from v
// (token rows v_stride elements apart, so v may sit in a fused qkv row). Device pointers.
struct kv_cache_target {
  const __nv_bfloat16* v;
  int v_stride;
  const int* slots;
  __nv_bfloat16* key_pool;
  __nv_bfloat16* value_pool;
};

// Qwen3's per-head RMSNorm of queries and keys followed by rotate-half RoPE, and the KV
// cache write in the same launch: q [tokens, heads, head_dim] normed by q_norm and rotated
// in place; k [tokens, kv_heads, head_dim] normed by k_norm and rotated into the key pool
// (k itself is left as it was), and v copied into the value pool (token rows q_stride and
// k_stride elements apart: q, k and v may sit in one fused qkv row). The norms' fp32 weights
// have head_dim elements; of the leading rotary_dim dims (0: all head_dim), pairs (i, i +
// rotary_dim/2) rotate by float(positions[t]) * inv_freq[i], inv_freq[i] = 1 / theta^(2i /
// rotary_dim) in fp32 as transformers computes it; the rest stay as normed. Same contract
// as cpu::rms_norm per head, cpu::rope, then cpu::kv_cache_write. Device pointers
// (positions too); head_dim even and at most 256, rotary_dim even.
void qk_norm_rope(__nv_bfloat16* q, const __nv_bfloat16* k, const float* q_norm, const float* k_norm, float eps,
                  int tokens, int heads, int kv_heads, int head_dim, int q_stride, int k_stride, const int* positions,
                  float theta, int rotary_dim, const kv_cache_target& cache, cudaStream_t stream);

}  // namespace troupe::cuda
