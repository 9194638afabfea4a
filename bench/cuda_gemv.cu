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
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/matmul.cuh"

namespace {

// Uniform values in [-scale, scale) from a hash of the index: random data without a host copy.
__global__ void fill_random(__nv_bfloat16* x, int64_t n, uint32_t seed, float scale) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 16, h *= 0x85ebca6bu, h ^= h >> 13, h *= 0xc2b2ae35u, h ^= h >> 16;
    x[i] = __float2bfloat16((float(h) * (2.0f / 4294967296.0f) - 1.0f) * scale);
  }
}

// Reads n float4s into L2. The buffer is zeros, so the sum is never 1 and nothing is
// written, but the compiler cannot know that and must load every element.
__global__ void read_through_l2(const float4* data, int64_t n, float* sink) {
  float sum = 0.0f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float4 v = data[i];
    sum += v.x + v.y + v.z + v.w;
  }
  if (sum == 1.0f) *sink = sum;
}

__nv_bfloat16* device_random(size_t n, uint32_t seed, float scale) {
  __nv_bfloat16* p;
  TROUPE_CUDA_CHECK(cudaMalloc(&p, n * sizeof(__nv_bfloat16)));
  fill_random<<<4096, 256>>>(p, int64_t(n), seed, scale);
  TROUPE_CUDA_CHECK(cudaGetLastError());
  return p;
}

struct projection {
  const char* name;
  int n, k;
  troupe::dtype y_type;
};

}  // namespace

int main() {
  using troupe::dtype;
  cudaDeviceProp prop;
  TROUPE_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, %.0f MB L2\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize / 1e6);
  const projection projections[] = {{"qkv", 5120, 2048, dtype::bf16},
                                    {"o", 2048, 4096, dtype::bf16},
                                    {"router", 128, 2048, dtype::f32},
                                    {"lm_head", 151936, 2048, dtype::f32}};
  constexpr int max_m = 8, max_k = 4096, max_n = 151936;
  __nv_bfloat16* x = device_random(size_t(max_m) * max_k, 1, 1.0f);
  void* y;
  TROUPE_CUDA_CHECK(cudaMalloc(&y, size_t(max_m) * max_n * sizeof(float)));
  const size_t flush_bytes = size_t(256) << 20;
  void* flush;
  float* sink;
  TROUPE_CUDA_CHECK(cudaMalloc(&flush, flush_bytes));
  TROUPE_CUDA_CHECK(cudaMemset(flush, 0, flush_bytes));
  TROUPE_CUDA_CHECK(cudaMalloc(&sink, sizeof(float)));
  cublasHandle_t cublas;
  TROUPE_CUDA_CHECK(cublasCreate(&cublas));
  cudaEvent_t start, stop;
  TROUPE_CUDA_CHECK(cudaEventCreate(&start));
  TROUPE_CUDA_CHECK(cudaEventCreate(&stop));

  auto median_seconds = [&](auto&& call) {
    for (int i = 0; i < 5; ++i) call();
    std::vector<float> ms(20, 0.0f);
    for (float& m : ms) {
      read_through_l2<<<4 * prop.multiProcessorCount, 1024>>>(
          static_cast<const float4*>(flush), int64_t(flush_bytes / 16), sink);
      TROUPE_CUDA_CHECK(cudaGetLastError());
      TROUPE_CUDA_CHECK(cudaEventRecord(start));
      call();
      TROUPE_CUDA_CHECK(cudaEventRecord(stop));
      TROUPE_CUDA_CHECK(cudaEventSynchronize(stop));
      TROUPE_CUDA_CHECK(cudaEventElapsedTime(&m, start, stop));
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2] * 1e-3;
  };

  uint32_t seed = 2;
  for (const projection& p : projections) {
    __nv_bfloat16* w = device_random(size_t(p.n) * p.k, seed++, 0.03f);
    const double bytes = double(p.n) * p.k * sizeof(__nv_bfloat16);
    for (int m : {1, 4, 8}) {
      const double gemv_s = median_seconds(
          [&] { troupe::cuda::matmul(cublas, x, m, p.k, w, p.n, p.y_type, y); });
      const double cublas_s = median_seconds([&] {
        const float alpha = 1.0f, beta = 0.0f;
        TROUPE_CUDA_CHECK(cublasGemmEx(cublas, CUBLAS_OP_T, CUBLAS_OP_N, p.n, m, p.k, &alpha, w,
                                       CUDA_R_16BF, p.k, x, CUDA_R_16BF, p.k, &beta, y,
                                       p.y_type == dtype::f32 ? CUDA_R_32F : CUDA_R_16BF, p.n,
                                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      });
      std::printf("%-7s n %6d k %4d m %d, %6.1f MB: gemv %7.1f us %5.0f GB/s; "
                  "cuBLAS %7.1f us %5.0f GB/s\n",
                  p.name, p.n, p.k, m, bytes / 1e6, gemv_s * 1e6, bytes / gemv_s / 1e9,
                  cublas_s * 1e6, bytes / cublas_s / 1e9);
    }
    TROUPE_CUDA_CHECK(cudaFree(w));
  }
  TROUPE_CUDA_CHECK(cudaEventDestroy(start));
  TROUPE_CUDA_CHECK(cudaEventDestroy(stop));
  TROUPE_CUDA_CHECK(cublasDestroy(cublas));
  for (void* p : {static_cast<void*>(x), y, flush, static_cast<void*>(sink)})
    TROUPE_CUDA_CHECK(cudaFree(p));
  return 0;
}
