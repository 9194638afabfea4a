#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace troupe::cuda {

// Stores `tokens` rows of keys and values ([tokens, row], row = kv_heads * head_dim, token
// rows `stride` elements apart so they can be read out of a fused qkv row) of a
// whole batch in a paged bf16 pool laid out as [blocks, block_size, row]: token t goes to
// slot slots[t] = block * block_size + offset, which the step plan computes from each
// sequence's block table (cpu::kv_cache_write's block_table and start, flattened so one
// launch serves every sequence). A negative slot skips the token. Device pointers.
void kv_cache_write(const __nv_bfloat16* k, const __nv_bfloat16* v, int tokens, int row,
                    int stride, const int* slots, __nv_bfloat16* key_pool, __nv_bfloat16* value_pool,
                    cudaStream_t stream);

}  // namespace troupe::cuda
