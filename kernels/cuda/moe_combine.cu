#include "kernels/cuda/moe_combine.cuh"

#include <cstdint>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"

namespace troupe::cuda {

static constexpr int block_size = 256;

// One block per token, 4 adjacent columns per thread.
static __global__ void moe_combine_kernel(const float* y, const int* chosen, int k, int hidden, int first_expert,
                                          int last_expert, __nv_bfloat16* out) {
  const size_t t = blockIdx.x;
  for (int c = int(threadIdx.x) * 4; c < hidden; c += block_size * 4) {
    float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int j = 0; j < k; ++j) {
      const int e = chosen[t * k + j];
      if (e < first_expert || e >= last_expert) continue;
      const float4 v = *reinterpret_cast<const float4*>(y + (t * k + j) * hidden + c);
      sum.x += v.x, sum.y += v.y, sum.z += v.z, sum.w += v.w;
    }
    uint2 packed;
    __nv_bfloat162* halves = reinterpret_cast<__nv_bfloat162*>(&packed);
    halves[0] = __floats2bfloat162_rn(sum.x, sum.y);
    halves[1] = __floats2bfloat162_rn(sum.z, sum.w);
    *reinterpret_cast<uint2*>(out + t * hidden + c) = packed;
  }
}

static void launch(const float* y, const int* chosen, int tokens, int k, int hidden, int first_expert, int last_expert,
                   __nv_bfloat16* out, cudaStream_t stream) {
  moe_combine_kernel<<<tokens, block_size, 0, stream>>>(y, chosen, k, hidden, first_expert, last_expert, out);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

void moe_combine(const float* y, const int* chosen, int tokens, int k, int hidden, int first_expert, int last_expert,
                 __nv_bfloat16* out, cudaStream_t stream) {
  TROUPE_CHECK(tokens >= 0 && k > 0 && hidden > 0 && hidden % 4 == 0, "bad shape");
  TROUPE_CHECK(uintptr_t(y) % 16 == 0 && uintptr_t(out) % 8 == 0, "misaligned pointers");
  if (tokens == 0) return;
  launch(y, chosen, tokens, k, hidden, first_expert, last_expert, out, stream);
}

}  // namespace troupe::cuda
