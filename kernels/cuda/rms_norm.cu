#include "kernels/cuda/rms_norm.cuh"

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"

namespace troupe::cuda {

static constexpr int block_size = 256;

// One block per row: add into the residual while summing squares, reduce across warps in
// shared memory, then a second pass over the (now cached) residual row writes the output.
static __global__ void rms_norm_kernel(const __nv_bfloat16* add, float* residual,
                                       const float* weight, float eps, int dim,
                                       __nv_bfloat16* out) {
  begin_dependent();
  float* rr = residual + size_t(blockIdx.x) * dim;
  __nv_bfloat16* yr = out + size_t(blockIdx.x) * dim;
  float sum = 0.0f;
  if (add != nullptr) {
    const __nv_bfloat16* ar = add + size_t(blockIdx.x) * dim;
    for (int i = threadIdx.x; i < dim; i += block_size) {
      const float v = rr[i] + __bfloat162float(ar[i]);
      rr[i] = v;
      sum += v * v;
    }
  } else {
    for (int i = threadIdx.x; i < dim; i += block_size) sum += rr[i] * rr[i];
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  __shared__ float warp_sums[block_size / 32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < block_size / 32; ++w) total += warp_sums[w];
  const float scale = rsqrtf(total / float(dim) + eps);
  for (int i = threadIdx.x; i < dim; i += block_size)
    yr[i] = __float2bfloat16(weight[i] * (rr[i] * scale));
}

static void launch(const __nv_bfloat16* add, float* residual, const float* weight, float eps,
                   int rows, int dim, __nv_bfloat16* out, cudaStream_t stream) {
  launch_dependent(rms_norm_kernel, rows, block_size, 0, stream, add, residual, weight, eps, dim, out);
}

void rms_norm(const __nv_bfloat16* add, float* residual, const float* weight, float eps, int rows,
              int dim, __nv_bfloat16* out, cudaStream_t stream) {
  TROUPE_CHECK(rows >= 0 && dim >= 0, "negative shape");
  TROUPE_CHECK(residual != nullptr && weight != nullptr && out != nullptr, "null pointer");
  if (rows == 0 || dim == 0) return;
  launch(add, residual, weight, eps, rows, dim, out, stream);
}

}  // namespace troupe::cuda
