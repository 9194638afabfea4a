#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace troupe::cuda {

// y[r, i] += bias[i] for `rows` bf16 rows of `cols` (rows `stride` elements apart), added
// in fp32 and rounded once: attention_bias models' q/k/v and o projections. Device
// pointers; bias fp32.
void add_bias(__nv_bfloat16* y, int rows, int cols, int stride, const float* bias, cudaStream_t stream);

}  // namespace troupe::cuda
