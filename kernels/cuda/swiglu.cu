#include "kernels/cuda/swiglu.cuh"

#include <algorithm>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"

namespace troupe::cuda {

static constexpr int block_size = 256;

static __global__ void swiglu_kernel(const __nv_bfloat16* gate, const __nv_bfloat16* up,
                                     int64_t n, __nv_bfloat16* out) {
  const int64_t stride = int64_t(gridDim.x) * block_size;
  for (int64_t i = int64_t(blockIdx.x) * block_size + threadIdx.x; i < n; i += stride) {
    const float g = __bfloat162float(gate[i]);
    out[i] = __float2bfloat16(g / (1.0f + expf(-g)) * __bfloat162float(up[i]));
  }
}

static void launch(const __nv_bfloat16* gate, const __nv_bfloat16* up, int64_t n,
                   __nv_bfloat16* out, cudaStream_t stream) {
  // A grid-stride loop over at most 64k blocks: enough to fill the chip many times over.
  const int blocks = int(std::min<int64_t>((n + block_size - 1) / block_size, 65536));
  swiglu_kernel<<<blocks, block_size, 0, stream>>>(gate, up, n, out);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

void swiglu(const __nv_bfloat16* gate, const __nv_bfloat16* up, int64_t n, __nv_bfloat16* out,
            cudaStream_t stream) {
  TROUPE_CHECK(n >= 0, "negative size");
  if (n == 0) return;
  launch(gate, up, n, out, stream);
}

}  // namespace troupe::cuda
