#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace troupe::cuda {

// cpu::gated_rms_norm, the output norm of Gated DeltaNet layers, for tokens x heads rows
// of dim: out[t, h] = x[t, h] / sqrt(mean(x[t, h]^2) + eps) * weight * silu(z[t, h]).
// x, out: bf16 [tokens, heads, dim] (out may be x); z: bf16 token rows z_stride elements
// apart, head h at h * dim (z may sit in a fused projection's row); weight: fp32 [dim].
// The sum of squares is fp32. Device pointers.
void gated_rms_norm(const __nv_bfloat16* x, const __nv_bfloat16* z, int z_stride, const float* weight, float eps,
                    int tokens, int heads, int dim, __nv_bfloat16* out, cudaStream_t stream);

}  // namespace troupe::cuda
