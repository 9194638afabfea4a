#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace troupe::cuda {

// out[i] = x[rows[i]] for `count` bf16 rows of `dim`: the rows a step computes logits
// for (each sampling sequence's last token). Device pointers.
void gather_rows(const __nv_bfloat16* x, int dim, const int* rows, int count, __nv_bfloat16* out, cudaStream_t stream);

}  // namespace troupe::cuda
