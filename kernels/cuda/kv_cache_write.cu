#include "kernels/cuda/kv_cache_write.cuh"

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"

namespace troupe::cuda {

static constexpr int block_size = 256;

// One block per token, copying its key row and value row.
static __global__ void kv_cache_write_kernel(const __nv_bfloat16* k, const __nv_bfloat16* v,
                                             int row, int stride, const int* slots, __nv_bfloat16* key_pool,
                                             __nv_bfloat16* value_pool) {
  begin_dependent();
  const int slot = slots[blockIdx.x];
  if (slot < 0) return;
  const size_t from = size_t(blockIdx.x) * stride, to = size_t(slot) * row;
  for (int i = threadIdx.x; i < row; i += block_size) {
    key_pool[to + i] = k[from + i];
    value_pool[to + i] = v[from + i];
  }
}

static void launch(const __nv_bfloat16* k, const __nv_bfloat16* v, int tokens, int row,
                   int stride, const int* slots, __nv_bfloat16* key_pool, __nv_bfloat16* value_pool,
                   cudaStream_t stream) {
  launch_dependent(kv_cache_write_kernel, tokens, block_size, 0, stream, k, v, row, stride, slots, key_pool,
                   value_pool);
}

void kv_cache_write(const __nv_bfloat16* k, const __nv_bfloat16* v, int tokens, int row,
                    int stride, const int* slots, __nv_bfloat16* key_pool, __nv_bfloat16* value_pool,
                    cudaStream_t stream) {
  TROUPE_CHECK(tokens >= 0 && row > 0 && stride >= row, "bad shape");
  if (tokens == 0) return;
  launch(k, v, tokens, row, stride, slots, key_pool, value_pool, stream);
}

}  // namespace troupe::cuda
