#pragma once
#include <cstddef>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/qk_norm_rope.cuh"

namespace troupe::cuda {

// A batch's keys and values in the paged bf16 pool, [blocks, block_size, kv_heads,
// head_dim] as cpu::paged_kv describes. Sequence s owns block_tables[s * max_blocks ..]
// and seq_lens[s] positions (1 <= seq_lens[s] <= max_seq_len). Device pointers except
// the two host ints.
struct paged_kv_batch {
  const __nv_bfloat16* keys;
  const __nv_bfloat16* values;
  int block_size;
  const int* block_tables;
  int max_blocks;
  const int* seq_lens;
  int max_seq_len;
};

// fp32 values of scratch paged_attention needs for up to `seqs` sequences: the caller owns
// it so the decode step allocates nothing. Covers every batch of at most `seqs`.
size_t paged_attention_workspace_floats(int seqs, int heads, int kv_heads, int head_dim, int max_seq_len);

// Decode attention (flash-decoding): one query per sequence, q and out [seqs, heads,
// head_dim] (q's rows q_stride elements apart: it may sit in a fused qkv row), the query
// at the sequence's last position seeing all of it, scale 1/sqrt(head_dim), grouped-query
// (heads a multiple of kv_heads, at most 16 query heads per KV head). Each split of the
// positions is a warp that runs both products on tensor cores with the query heads of its
// KV head as rows, so a key or value row is read once for all of them; a second launch
// merges the splits through the workspace. A batch of at most 128 (sequence, KV head)
// pairs (decode up to batch 32) and max_seq_len up to 4096 (less above 8 pairs, down to
// 2048, for at most 16 pairs) takes one launch instead: the splits of a pair are the warps
// of one thread block cluster, merged in its shared memory, and the workspace is unused. bf16 products with fp32
// accumulation, scores and sums (the probabilities enter P V in bf16, as in
// FlashAttention); head_dim 64, 128 or 256 (which spills registers: it is built for
// Qwen3.5-35B-A3B's ten full-attention layers). Same contract as cpu::paged_attention with
// tokens = 1, start = seq_lens[s] - 1.
void paged_attention(const __nv_bfloat16* q, int q_stride, int seqs, int heads, int kv_heads, int head_dim,
                     const paged_kv_batch& kv, float* workspace, __nv_bfloat16* out, cudaStream_t stream);

// A decode step's qk_norm_rope then paged_attention: both contracts, with tokens = seqs
// (sequence s's token at position seq_lens[s] - 1, slots[s] that position's slot), q, k and
// v the step's rows from the qkv projection, and cache's pools those of kv. Where
// paged_attention would take its cluster kernel (decode up to batch 32) it is one launch: each
// cluster normalises and rotates its KV head's queries into its shared memory, and the
// block holding the newest position also its key and value, which that block reads from
// there and writes into the pools (qk_norm_rope's bits). q is then left as it was instead
// of rotated in place, so after the call its contents are unspecified. A padding sequence
// (slot < 0) writes nothing, and its output is not meaningful (in one launch it attends
// over its own new key; in two, over what the pool holds at its slot). Other batches run
// the two launches.
void decode_attention(__nv_bfloat16* q, const __nv_bfloat16* k, const float* q_norm, const float* k_norm, float eps,
                      int seqs, int heads, int kv_heads, int head_dim, int q_stride, int k_stride, const int* positions,
                      float theta, int rotary_dim, const kv_cache_target& cache, const paged_kv_batch& kv,
                      float* workspace, __nv_bfloat16* out, cudaStream_t stream);

}  // namespace troupe::cuda
