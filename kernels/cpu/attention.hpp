#pragma once

namespace troupe::cpu {

// Causal grouped-query attention of `tokens` queries against a KV cache.
// q: [tokens, heads, head_dim]; k_cache/v_cache: [positions, kv_heads, head_dim] holding
// every position up to the last query's; query t sits at position start + t and sees
// positions 0..start + t. out: [tokens, heads, head_dim]. Scale is 1/sqrt(head_dim).
void causal_attention(const float* q, int tokens, int heads, int kv_heads, int head_dim,
                      const float* k_cache, const float* v_cache, int start, float* out);

}  // namespace troupe::cpu
