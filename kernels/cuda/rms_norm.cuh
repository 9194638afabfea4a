#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace troupe::cuda {

// The residual stream stays fp32 between layers (as on the CPU path); block outputs and
// normed activations are bf16. For `rows` rows of `dim`, on `stream`:
//   residual[r] += add[r]   (skipped when add is null: the first layer's input norm)
//   out[r] = residual[r] / sqrt(mean(residual[r]^2) + eps) * weight
// Device pointers; weight is fp32. The sum of squares is fp32.
void rms_norm(const __nv_bfloat16* add, float* residual, const float* weight, float eps, int rows, int dim,
              __nv_bfloat16* out, cudaStream_t stream);

}  // namespace troupe::cuda
