// The two ceilings METHOD.md asks for, measured on the card as found: device-to-device
// copy bandwidth (bytes read plus bytes written) and a large bf16 GEMM through cuBLAS on
// random data. Each is the median of several event-timed runs after warm-ups.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <cublas_v2.h>
#include <cuda_bf16.h>

#include "bench/copy_bandwidth.hpp"
#include "bench/cuda_bench_support.cuh"
#include "kernels/cuda/check.cuh"

using namespace troupe::bench;

namespace {

void copy_bandwidth() {
  const size_t bytes = size_t(4) << 30;
  const double gbs = copy_bandwidth_gbs(bytes, 9);
  std::printf("copy: %.1f GiB device-to-device, median %.3f ms, %.0f GB/s (read + write)\n",
              double(bytes) / double(1 << 30), 2.0 * double(bytes) / (gbs * 1e9) * 1e3, gbs);
}

void gemm_rate() {
  const int n = 8192;
  const size_t count = size_t(n) * n;
  __nv_bfloat16 *a, *b, *c;
  TROUPE_CUDA_CHECK(cudaMalloc(&a, count * sizeof(__nv_bfloat16)));
  TROUPE_CUDA_CHECK(cudaMalloc(&b, count * sizeof(__nv_bfloat16)));
  TROUPE_CUDA_CHECK(cudaMalloc(&c, count * sizeof(__nv_bfloat16)));
  troupe::cuda::fill_uniform(a, 0, int64_t(count), 1.0f, 1, nullptr);
  troupe::cuda::fill_uniform(b, 0, int64_t(count), 1.0f, 2, nullptr);
  cublasHandle_t handle;
  TROUPE_CUDA_CHECK(cublasCreate(&handle));
  const float alpha = 1.0f, beta = 0.0f;
  const float ms = median_ms(3, 15, [&] {
    TROUPE_CUDA_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &alpha, a, CUDA_R_16BF, n, b, CUDA_R_16BF,
                                   n, &beta, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  });
  std::printf("gemm: bf16 %dx%dx%d (TN, fp32 accumulate), median %.3f ms, %.0f TFLOP/s\n", n, n, n, ms,
              2.0 * n * double(n) * n / (ms * 1e-3) / 1e12);
  TROUPE_CUDA_CHECK(cublasDestroy(handle));
  TROUPE_CUDA_CHECK(cudaFree(a));
  TROUPE_CUDA_CHECK(cudaFree(b));
  TROUPE_CUDA_CHECK(cudaFree(c));
}

}  // namespace

int main() {
  describe_device();
  copy_bandwidth();
  gemm_rate();
  return 0;
}
