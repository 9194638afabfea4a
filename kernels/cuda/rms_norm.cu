#include "kernels/cuda/rms_norm.cuh"

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/rms_norm_row.cuh"

namespace troupe::cuda {

static constexpr int block_size = rms_norm_block;

// One block per row.
static __global__ void rms_norm_kernel(const __nv_bfloat16* add, float* residual, const float* weight, float eps,
                                       int dim, __nv_bfloat16* out) {
  begin_dependent();
  __shared__ float warp_sums[block_size / 32];
  float* rr = residual + size_t(blockIdx.x) * dim;
  __nv_bfloat16* yr = out + size_t(blockIdx.x) * dim;
  rms_norm_row<block_size>(add == nullptr ? nullptr : add + size_t(blockIdx.x) * dim, rr, weight, eps, dim, warp_sums,
                           [&](int i, float v, __nv_bfloat16 x) {
                             rr[i] = v;
                             yr[i] = x;
                           });
}

static void launch(const __nv_bfloat16* add, float* residual, const float* weight, float eps, int rows, int dim,
                   __nv_bfloat16* out, cudaStream_t stream) {
  launch_dependent(rms_norm_kernel, rows, block_size, 0, stream, add, residual, weight, eps, dim, out);
}

void rms_norm(const __nv_bfloat16* add, float* residual, const float* weight, float eps, int rows, int dim,
              __nv_bfloat16* out, cudaStream_t stream) {
  TROUPE_CHECK(rows >= 0 && dim >= 0, "negative shape");
  TROUPE_CHECK(residual != nullptr && weight != nullptr && out != nullptr, "null pointer");
  if (rows == 0 || dim == 0) return;
  launch(add, residual, weight, eps, rows, dim, out, stream);
}

}  // namespace troupe::cuda
