#pragma once
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace troupe::cuda {

// out[i] = silu(gate[i]) * up[i] for n values, in fp32 and rounded once to bf16, on
// `stream`. Device pointers, 16-byte aligned; out may be gate. Same contract as cpu::swiglu.
void swiglu(const __nv_bfloat16* gate, const __nv_bfloat16* up, int64_t n, __nv_bfloat16* out, cudaStream_t stream);

}  // namespace troupe::cuda
