#pragma once
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace troupe::cuda {

// out[i] = bf16 of a uniform value in [-bound, bound): a hash of (seed, first + i), so
// the same seed gives the same values on every device and launch, and a part of a tensor
// (from its element `first`) the values of the whole one there. Random weights for
// --load-format dummy, made on the GPU where they are used (tens of GB at full size).
void fill_uniform(__nv_bfloat16* out, int64_t first, int64_t n, float bound, uint64_t seed, cudaStream_t stream);

// The value fill_uniform writes at index i, computed on the host (its test's reference).
float uniform_value(int64_t i, float bound, uint64_t seed);

}  // namespace troupe::cuda
