#include "kernels/cuda/shared_expert_add.cuh"

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"

namespace troupe::cuda {

static constexpr int block_size = 256, per_thread = 4;

// Grid (tokens, width / (block_size * per_thread)).
static __global__ void shared_expert_add_kernel(__nv_bfloat16* out, const __nv_bfloat16* expert, const float* gate,
                                                int width) {
  begin_dependent();
  const int t = int(blockIdx.x);
  const float g = 1.0f / (1.0f + expf(-gate[t]));
  __nv_bfloat16* o = out + size_t(t) * width;
  const __nv_bfloat16* e = expert + size_t(t) * width;
#pragma unroll
  for (int k = 0; k < per_thread; ++k) {
    const int i = (int(blockIdx.y) * per_thread + k) * block_size + int(threadIdx.x);
    if (i < width) o[i] = __float2bfloat16(__bfloat162float(o[i]) + g * __bfloat162float(e[i]));
  }
}

void shared_expert_add(__nv_bfloat16* out, const __nv_bfloat16* expert, const float* gate, int tokens, int width,
                       cudaStream_t stream) {
  TROUPE_CHECK(tokens >= 0 && width > 0, "bad shared expert shape");
  TROUPE_CHECK(out != nullptr && expert != nullptr && gate != nullptr, "null pointer");
  if (tokens == 0) return;
  const int chunk = block_size * per_thread;
  launch_dependent(shared_expert_add_kernel, dim3(tokens, (width + chunk - 1) / chunk), block_size, 0, stream, out,
                   expert, gate, width);
}

}  // namespace troupe::cuda
