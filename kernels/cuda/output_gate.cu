#include "kernels/cuda/output_gate.cuh"

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"

namespace troupe::cuda {

static constexpr int block_size = 256, per_thread = 4;

// Grid (tokens, width / (block_size * per_thread)).
static __global__ void output_gate_kernel(__nv_bfloat16* x, const __nv_bfloat16* gate, int gate_stride, int width) {
  begin_dependent();
  const int t = int(blockIdx.x);
  __nv_bfloat16* xr = x + size_t(t) * width;
  const __nv_bfloat16* gr = gate + size_t(t) * gate_stride;
#pragma unroll
  for (int e = 0; e < per_thread; ++e) {
    const int i = (int(blockIdx.y) * per_thread + e) * block_size + int(threadIdx.x);
    if (i < width) {
      const float g = __bfloat162float(gr[i]);
      xr[i] = __float2bfloat16(__bfloat162float(xr[i]) / (1.0f + expf(-g)));
    }
  }
}

void output_gate(__nv_bfloat16* x, const __nv_bfloat16* gate, int gate_stride, int tokens, int width,
                 cudaStream_t stream) {
  TROUPE_CHECK(tokens >= 0 && width > 0 && gate_stride >= width, "bad output gate shape");
  TROUPE_CHECK(x != nullptr && gate != nullptr, "null pointer");
  if (tokens == 0) return;
  const int chunk = block_size * per_thread;
  launch_dependent(output_gate_kernel, dim3(tokens, (width + chunk - 1) / chunk), block_size, 0, stream, x, gate,
                   gate_stride, width);
}

}  // namespace troupe::cuda
