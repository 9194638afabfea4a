#pragma once
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include "base/dtype.hpp"

namespace troupe::cuda {

// y[m, n] = x[m, k] * w[n, k]^T through cuBLAS: bf16 inputs, fp32 accumulation
// (CUBLAS_COMPUTE_32F), y in fp32 (logits, router) or bf16 (activations) as y_type says.
// w is a Hugging Face Linear weight, [out_features, in_features]. The work runs on the
// handle's stream; device pointers. Same contract as cpu::matmul with a bf16 weight.
// The few rows of a decode step (gemv_fits: m <= 8, k a multiple of 8, 16-byte aligned x
// and w) go to gemv instead, which streams w at memory speed and whose row bits do not
// depend on m.
void matmul(cublasHandle_t handle, const __nv_bfloat16* x, int m, int k, const __nv_bfloat16* w, int n, dtype y_type,
            void* y);

}  // namespace troupe::cuda
