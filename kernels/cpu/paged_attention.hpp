#pragma once

namespace troupe::cpu {

// One sequence's keys and values in a paged pool. Each block holds `block_size`
// positions of [kv_heads, head_dim]; position p lives in block block_table[p / block_size]
// at row p % block_size.
struct paged_kv {
  const float* keys;
  const float* values;
  const int* block_table;
  int block_size;
};

// Causal grouped-query attention of `tokens` queries of one sequence. q and out:
// [tokens, heads, head_dim]; query t sits at position start + t and sees positions
// 0..start + t, which must already be in `kv`. Scale is 1/sqrt(head_dim).
void paged_attention(const float* q, int tokens, int heads, int kv_heads, int head_dim, const paged_kv& kv, int start,
                     float* out);

}  // namespace troupe::cpu
