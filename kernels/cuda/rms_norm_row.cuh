#pragma once
// One row's RMSNorm by one block: the computation cuda::rms_norm and gemv's normalising
// input share, so the two give the same bits.
#include <cuda_bf16.h>

namespace troupe::cuda {

// cuda::rms_norm's block: a normalising gemv has as many threads, so the sums match.
inline constexpr int rms_norm_block = 256;

// v[i] = residual[i] + add[i] (add null: residual alone), in fp32; each thread sums the
// squares of its strided elements, the lanes of a warp combine theirs, then the warps'
// sums are added in warp order; store(i, v[i], bf16(weight[i] * (v[i] * scale))) runs for
// every i, by the thread that summed it. warp_sums: [Block / 32] floats of shared memory.
// Every thread of the block calls it.
template <int Block, class Store>
__device__ void rms_norm_row(const __nv_bfloat16* add, const float* residual, const float* weight, float eps, int dim,
                             float* warp_sums, Store store) {
  auto value = [&](int i) { return add != nullptr ? residual[i] + __bfloat162float(add[i]) : residual[i]; };
  float sum = 0.0f;
  for (int i = int(threadIdx.x); i < dim; i += Block) {
    const float v = value(i);
    sum += v * v;
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  __syncthreads();  // warp_sums is free (a previous row's readers are done)
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = sum;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < Block / 32; ++w) total += warp_sums[w];
  const float scale = rsqrtf(total / float(dim) + eps);
  for (int i = int(threadIdx.x); i < dim; i += Block) {
    const float v = value(i);
    store(i, v, __float2bfloat16(weight[i] * (v * scale)));
  }
}

}  // namespace troupe::cuda
