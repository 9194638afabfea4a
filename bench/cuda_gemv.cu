// cuda::matmul at decode batch sizes (m <= 8 takes its gemv path) against cuBLAS called
// directly as matmul.cu calls it, on the Qwen3-30B-A3B projections: qkv, o, the MoE router
// and lm_head. Each is the median of 20 event-timed calls after 5 warm-ups, with L2
// flushed before each call by reading a 256 MB buffer, so the weights come from HBM as
// they do when 48 layers take turns. GB/s counts the weight bytes only.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <cublas_v2.h>
#include <cuda_bf16.h>

#include "base/dtype.hpp"
#include "bench/cuda_bench_support.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/matmul.cuh"

using namespace troupe::bench;

namespace {

struct projection {
  const char* name;
  int n, k;
  troupe::dtype y_type;
};

}  // namespace

int main() {
  using troupe::dtype;
  describe_device();
  const projection projections[] = {{"qkv", 5120, 2048, dtype::bf16},
                                    {"o", 2048, 4096, dtype::bf16},
                                    {"router", 128, 2048, dtype::f32},
                                    {"lm_head", 151936, 2048, dtype::f32}};
  constexpr int max_m = 8, max_k = 4096, max_n = 151936;
  __nv_bfloat16* x = device_random(size_t(max_m) * max_k, 1, 1.0f);
  void* y;
  TROUPE_CUDA_CHECK(cudaMalloc(&y, size_t(max_m) * max_n * sizeof(float)));
  const l2_flush flush(size_t(256) << 20);
  cublasHandle_t cublas;
  TROUPE_CUDA_CHECK(cublasCreate(&cublas));
  auto median_seconds = [&](auto&& call) { return median_ms(5, 20, call, flush) * 1e-3; };

  uint32_t seed = 2;
  for (const projection& p : projections) {
    __nv_bfloat16* w = device_random(size_t(p.n) * p.k, seed++, 0.03f);
    const double bytes = double(p.n) * p.k * sizeof(__nv_bfloat16);
    for (int m : {1, 4, 8}) {
      const double gemv_s = median_seconds([&] { troupe::cuda::matmul(cublas, x, m, p.k, w, p.n, p.y_type, y); });
      const double cublas_s = median_seconds([&] {
        const float alpha = 1.0f, beta = 0.0f;
        TROUPE_CUDA_CHECK(cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, p.n, m, p.k, &alpha, w, CUDA_R_16BF, p.k, x,
                                       CUDA_R_16BF, p.k, &beta, y, p.y_type == dtype::f32 ? CUDA_R_32F : CUDA_R_16BF,
                                       p.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      });
      std::printf(
          "%-7s n %6d k %4d m %d, %6.1f MB: gemv %7.1f us %5.0f GB/s; "
          "cuBLAS %7.1f us %5.0f GB/s\n",
          p.name, p.n, p.k, m, bytes / 1e6, gemv_s * 1e6, bytes / gemv_s / 1e9, cublas_s * 1e6, bytes / cublas_s / 1e9);
    }
    TROUPE_CUDA_CHECK(cudaFree(w));
  }
  TROUPE_CUDA_CHECK(cublasDestroy(cublas));
  for (void* p : {static_cast<void*>(x), y}) TROUPE_CUDA_CHECK(cudaFree(p));
  return 0;
}
