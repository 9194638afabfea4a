#include "kernels/cpu/kv_cache_write.hpp"

#include <cstdint>
#include <cstring>

namespace troupe::cpu {

void kv_cache_write(const float* k, const float* v, int tokens, int row, const int* block_table, int block_size,
                    int start, float* key_pool, float* value_pool) {
  for (int t = 0; t < tokens; ++t) {
    const int p = start + t;
    const int64_t slot = int64_t(block_table[p / block_size]) * block_size + p % block_size;
    std::memcpy(key_pool + slot * row, k + int64_t(t) * row, sizeof(float) * size_t(row));
    std::memcpy(value_pool + slot * row, v + int64_t(t) * row, sizeof(float) * size_t(row));
  }
}

}  // namespace troupe::cpu
