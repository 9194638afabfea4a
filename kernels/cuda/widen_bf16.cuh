#pragma once
// Eight bf16 (one 16-byte load) as fp32, for kernels that stream weights in 16-byte chunks
// (gemv, moe_gemv): a bf16 is the top half of an fp32.
#include <cstdint>

#include <cuda_runtime.h>

namespace troupe::cuda {

__device__ __forceinline__ void widen_bf16x8(const uint4& v, float (&f)[8]) {
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = __uint_as_float(words[i] << 16);
    f[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
  }
}

}  // namespace troupe::cuda
