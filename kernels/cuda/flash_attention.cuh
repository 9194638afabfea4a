#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace troupe::cuda {

// A prefill batch over the paged bf16 pool ([blocks, block_size, kv_heads, head_dim] as
// cpu::paged_kv describes). Sequence s has new tokens query_starts[s]..query_starts[s + 1]
// - 1 of the batch, at positions positions_start[s] onwards; its block table
// block_tables[s * max_blocks ..] covers every position up to its last new token, and the
// pool already holds all of them (qk_norm_rope wrote them). max_query_len is at least
// every sequence's count of new tokens. Device pointers except the three host ints.
struct flash_attention_batch {
  const __nv_bfloat16* keys;
  const __nv_bfloat16* values;
  int block_size;
  const int* block_tables;
  int max_blocks;
  int seqs;
  const int* query_starts;     // [seqs + 1]
  const int* positions_start;  // [seqs]
  int max_query_len;
};

// Prefill attention (FlashAttention-2): causal, grouped-query (heads a multiple of
// kv_heads), scale 1/sqrt(head_dim), head_dim 64, 128 or 256. q and out: [tokens, heads,
// head_dim], every sequence's new tokens concatenated; the query at position p sees its
// sequence's positions 0..p. bf16 tensor-core products with fp32 scores, softmax and
// accumulation; the score matrix is never stored. q, out and the pools 16-byte aligned.
// Same contract as cpu::paged_attention per sequence with start = positions_start[s].
void flash_attention(const __nv_bfloat16* q, int heads, int kv_heads, int head_dim, const flash_attention_batch& batch,
                     __nv_bfloat16* out, cudaStream_t stream);

}  // namespace troupe::cuda
