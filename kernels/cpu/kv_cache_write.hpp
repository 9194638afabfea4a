#pragma once

namespace troupe::cpu {

// Stores `tokens` rows of keys and values ([tokens, row]) at positions start.. of one
// sequence in a paged pool laid out as [blocks, block_size, row].
void kv_cache_write(const float* k, const float* v, int tokens, int row, const int* block_table, int block_size,
                    int start, float* key_pool, float* value_pool);

}  // namespace troupe::cpu
