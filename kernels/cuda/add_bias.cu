#include "kernels/cuda/add_bias.cuh"

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"

namespace troupe::cuda {

static constexpr int block_size = 256;

// One block per row.
static __global__ void add_bias_kernel(__nv_bfloat16* y, int cols, int stride, const float* bias) {
  begin_dependent();
  __nv_bfloat16* row = y + size_t(blockIdx.x) * stride;
  for (int i = threadIdx.x; i < cols; i += block_size) row[i] = __float2bfloat16(__bfloat162float(row[i]) + bias[i]);
}

void add_bias(__nv_bfloat16* y, int rows, int cols, int stride, const float* bias, cudaStream_t stream) {
  TROUPE_CHECK(rows >= 0 && cols > 0 && stride >= cols, "bad shape");
  if (rows == 0) return;
  launch_dependent(add_bias_kernel, rows, block_size, 0, stream, y, cols, stride, bias);
}

}  // namespace troupe::cuda
