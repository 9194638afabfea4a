#include "kernels/cuda/rms_norm.cuh"

#include "kernels/cuda/check.cuh"

namespace troupe::cuda {

static constexpr int block_size = 256;

// One block per row: a strided sum of squares, reduced across warps in shared memory.
static __global__ void rms_norm_kernel(const float* x, const float* weight, float eps, int dim,
                                       float* out) {
  const float* xr = x + size_t(blockIdx.x) * dim;
  float* yr = out + size_t(blockIdx.x) * dim;
  float sum = 0.0f;
  for (int i = threadIdx.x; i < dim; i += block_size) sum += xr[i] * xr[i];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  __shared__ float warp_sums[block_size / 32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < block_size / 32; ++w) total += warp_sums[w];
  const float scale = rsqrtf(total / float(dim) + eps);
  for (int i = threadIdx.x; i < dim; i += block_size) yr[i] = weight[i] * (xr[i] * scale);
}

static void launch(const float* x, const float* weight, float eps, int rows, int dim, float* out,
                   cudaStream_t stream) {
  rms_norm_kernel<<<rows, block_size, 0, stream>>>(x, weight, eps, dim, out);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

void rms_norm(const float* x, const float* weight, float eps, int rows, int dim, float* out,
              cudaStream_t stream) {
  if (rows <= 0 || dim <= 0) return;
  launch(x, weight, eps, rows, dim, out, stream);
}

}  // namespace troupe::cuda
