#include "kernels/cuda/gated_rms_norm.cuh"

#include <cstdint>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"

namespace troupe::cuda {

static constexpr int warps_per_block = 4;

// One warp per (token, head) row: rows are a head wide (128 for Qwen3.5), too short to
// share among warps.
static __global__ void gated_rms_norm_kernel(const __nv_bfloat16* x, const __nv_bfloat16* z, int z_stride,
                                             const float* weight, float eps, int heads, int dim, int64_t rows,
                                             __nv_bfloat16* out) {
  begin_dependent();
  const int64_t row = int64_t(blockIdx.x) * warps_per_block + threadIdx.x / 32;
  const int lane = int(threadIdx.x) % 32;
  if (row >= rows) return;
  const __nv_bfloat16* xr = x + row * dim;
  const __nv_bfloat16* zr = z + (row / heads) * z_stride + (row % heads) * dim;
  __nv_bfloat16* yr = out + row * dim;
  float sum = 0.0f;
  for (int i = lane; i < dim; i += 32) {
    const float v = __bfloat162float(xr[i]);
    sum += v * v;
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  const float scale = 1.0f / sqrtf(sum / float(dim) + eps);
  for (int i = lane; i < dim; i += 32) {  // the lane that read x[i] writes out[i]: out may be x
    const float zi = __bfloat162float(zr[i]);
    yr[i] = __float2bfloat16(weight[i] * (__bfloat162float(xr[i]) * scale) * (zi / (1.0f + expf(-zi))));
  }
}

void gated_rms_norm(const __nv_bfloat16* x, const __nv_bfloat16* z, int z_stride, const float* weight, float eps,
                    int tokens, int heads, int dim, __nv_bfloat16* out, cudaStream_t stream) {
  TROUPE_CHECK(tokens >= 0 && heads > 0 && dim > 0 && z_stride >= heads * dim, "bad gated norm shape");
  TROUPE_CHECK(x != nullptr && z != nullptr && weight != nullptr && out != nullptr, "null pointer");
  const int64_t rows = int64_t(tokens) * heads;
  if (rows == 0) return;
  const int64_t blocks = (rows + warps_per_block - 1) / warps_per_block;
  TROUPE_CHECK(blocks < (int64_t(1) << 31), "too many rows");
  launch_dependent(gated_rms_norm_kernel, unsigned(blocks), warps_per_block * 32, 0, stream, x, z, z_stride, weight,
                   eps, heads, dim, rows, out);
}

}  // namespace troupe::cuda
