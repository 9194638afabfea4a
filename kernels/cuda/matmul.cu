#include "kernels/cuda/matmul.cuh"

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/gemv.cuh"

namespace troupe::cuda {

// cuBLAS is column-major: row-major y [m, n] is column-major y^T [n, m] = w [n, k] (w
// read as column-major [k, n], transposed) times x^T (x read as column-major [k, m]).
static void launch(cublasHandle_t handle, const __nv_bfloat16* x, int m, int k, const __nv_bfloat16* w, int n,
                   cudaDataType_t y_type, void* y) {
  const float alpha = 1.0f, beta = 0.0f;
  TROUPE_CUDA_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &alpha, w, CUDA_R_16BF, k, x, CUDA_R_16BF,
                                 k, &beta, y, y_type, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void matmul(cublasHandle_t handle, const __nv_bfloat16* x, int m, int k, const __nv_bfloat16* w, int n, dtype y_type,
            void* y) {
  TROUPE_CHECK(m >= 0 && k > 0 && n > 0, "bad shape");
  TROUPE_CHECK(y_type == dtype::f32 || y_type == dtype::bf16, "output must be fp32 or bf16");
  if (m == 0) return;
  if (gemv_fits(m, k, x, w)) {
    cudaStream_t stream;
    TROUPE_CUDA_CHECK(cublasGetStream(handle, &stream));
    gemv(x, m, k, w, n, y_type, y, stream);
    return;
  }
  launch(handle, x, m, k, w, n, y_type == dtype::f32 ? CUDA_R_32F : CUDA_R_16BF, y);
}

}  // namespace troupe::cuda
