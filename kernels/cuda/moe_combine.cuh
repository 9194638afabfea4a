#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace troupe::cuda {

// out[t] = y[t * k] + ... + y[t * k + k - 1], over the pairs whose chosen expert is in
// [first_expert, last_expert) only (the others' rows of y are never read), summed in fp32
// in j order and rounded once to bf16; a token with none gets zeros. y [tokens * k,
// hidden] fp32 from moe_down, chosen [tokens, k] global expert ids, out [tokens, hidden].
// hidden % 4 == 0; device pointers, y 16-byte and out 8-byte aligned.
void moe_combine(const float* y, const int* chosen, int tokens, int k, int hidden, int first_expert, int last_expert,
                 __nv_bfloat16* out, cudaStream_t stream);

}  // namespace troupe::cuda
