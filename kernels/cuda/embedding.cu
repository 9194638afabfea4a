#include "kernels/cuda/embedding.cuh"

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"

namespace troupe::cuda {

static constexpr int block_size = 256;

// One block per token.
static __global__ void embedding_kernel(const __nv_bfloat16* table, int64_t vocab, int dim, const int* ids,
                                        float* out) {
  begin_dependent();
  const int id = ids[blockIdx.x];
  if (id < 0 || id >= vocab) __trap();
  const __nv_bfloat16* row = table + id * int64_t(dim);
  float* o = out + int64_t(blockIdx.x) * dim;
  for (int i = threadIdx.x; i < dim; i += block_size) o[i] = __bfloat162float(row[i]);
}

static void launch(const __nv_bfloat16* table, int64_t vocab, int dim, const int* ids, int tokens, float* out,
                   cudaStream_t stream) {
  launch_dependent(embedding_kernel, tokens, block_size, 0, stream, table, vocab, dim, ids, out);
}

void embedding(const __nv_bfloat16* table, int64_t vocab, int dim, const int* ids, int tokens, float* out,
               cudaStream_t stream) {
  TROUPE_CHECK(vocab > 0 && dim > 0 && tokens >= 0, "bad shape");
  if (tokens == 0) return;
  launch(table, vocab, dim, ids, tokens, out, stream);
}

}  // namespace troupe::cuda
