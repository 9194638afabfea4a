#pragma once
#include <cstddef>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "base/dtype.hpp"

namespace troupe::cuda {

inline constexpr int gemv_max_rows = 8;
// x is staged whole in shared memory: m * k elements at most (128 KB).
inline constexpr size_t gemv_max_x_elements = 65536;

// Whether gemv takes these arguments: 1 <= m <= gemv_max_rows, k a positive multiple of 8
// with m * k <= gemv_max_x_elements, x and w 16-byte aligned.
bool gemv_fits(int m, int k, const __nv_bfloat16* x, const __nv_bfloat16* w);

// y[m, n] = x[m, k] * w[n, k]^T for the few rows of a decode step, the contract of
// matmul: bf16 inputs, fp32 products and sums, y in fp32 or bf16 as y_type says
// (rounded once). Memory-bound: each weight byte is read once whatever m is. A row's
// summation order depends on (n, k) only, so its bits do not depend on m or on the other
// rows of x. Arguments as gemv_fits says (m = 0 does nothing), device pointers; no sync,
// no allocation, graph-capturable.
void gemv(const __nv_bfloat16* x, int m, int k, const __nv_bfloat16* w, int n, dtype y_type, void* y,
          cudaStream_t stream);

// An input that the gemv normalises on the way in: x[r] is what cuda::rms_norm(add,
// residual, weight, eps) writes to out[r], to the bit, so the norm before a decode step's
// matmul costs no launch of its own. The first block also stores residual + add in
// residual_out (another buffer: the other blocks still read residual) and, when
// normed_out is set, x.
struct gemv_norm {
  const __nv_bfloat16* add;  // null: the residual alone
  const float* residual;
  const float* weight;
  float eps;
  float* residual_out;
  __nv_bfloat16* normed_out;  // null: x is not kept
};

// Whether gemv_normed takes m rows of k: as gemv_fits, x being internal.
bool gemv_normed_fits(int m, int k, const __nv_bfloat16* w);

// y[m, n] = x[m, k] * w[n, k]^T with x from `in`, otherwise as gemv.
void gemv_normed(const gemv_norm& in, int m, int k, const __nv_bfloat16* w, int n, dtype y_type, void* y,
                 cudaStream_t stream);

}  // namespace troupe::cuda
