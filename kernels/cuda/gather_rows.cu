#include "kernels/cuda/gather_rows.cuh"

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"

namespace troupe::cuda {

static constexpr int block_size = 256;

// One block per gathered row.
static __global__ void gather_rows_kernel(const __nv_bfloat16* x, int dim, const int* rows, __nv_bfloat16* out) {
  const __nv_bfloat16* from = x + size_t(rows[blockIdx.x]) * dim;
  __nv_bfloat16* to = out + size_t(blockIdx.x) * dim;
  for (int i = threadIdx.x; i < dim; i += block_size) to[i] = from[i];
}

void gather_rows(const __nv_bfloat16* x, int dim, const int* rows, int count, __nv_bfloat16* out, cudaStream_t stream) {
  TROUPE_CHECK(dim > 0 && count >= 0, "bad shape");
  if (count == 0) return;
  gather_rows_kernel<<<count, block_size, 0, stream>>>(x, dim, rows, out);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace troupe::cuda
