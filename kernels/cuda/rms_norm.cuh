#pragma once
#include <cuda_runtime.h>

namespace troupe::cuda {

// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight for `rows` rows of `dim`, on `stream`.
// Device pointers; out may be x. Same contract as cpu::rms_norm.
void rms_norm(const float* x, const float* weight, float eps, int rows, int dim, float* out,
              cudaStream_t stream);

}  // namespace troupe::cuda
