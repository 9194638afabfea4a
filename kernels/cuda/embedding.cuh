#pragma once
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace troupe::cuda {

// out[t] = table row ids[t] as fp32: the start of the fp32 residual stream (see rms_norm).
// table is bf16 [vocab, dim]; ids (device) come checked from the tokenizer, so an id outside
// the table is a broken invariant and traps the kernel (the next CUDA check then aborts).
void embedding(const __nv_bfloat16* table, int64_t vocab, int dim, const int* ids, int tokens, float* out,
               cudaStream_t stream);

}  // namespace troupe::cuda
