// The two ceilings METHOD.md asks for, measured on the card as found: device-to-device
// copy bandwidth (bytes read plus bytes written) and a large bf16 GEMM through cuBLAS on
// random data. Each is the median of several event-timed runs after warm-ups.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <cublas_v2.h>
#include <cuda_bf16.h>

#include "kernels/cuda/check.cuh"

namespace {

// Uniform values in [-1, 1) from a hash of the index: random data without a host copy.
__global__ void fill_random(__nv_bfloat16* x, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 16, h *= 0x85ebca6bu, h ^= h >> 13, h *= 0xc2b2ae35u, h ^= h >> 16;
    x[i] = __float2bfloat16(float(h) * (2.0f / 4294967296.0f) - 1.0f);
  }
}

template <class F>
float median_ms(int warmups, int runs, F&& body) {
  cudaEvent_t start, stop;
  TROUPE_CUDA_CHECK(cudaEventCreate(&start));
  TROUPE_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < warmups; ++i) body();
  std::vector<float> ms(size_t(runs), 0.0f);
  for (float& m : ms) {
    TROUPE_CUDA_CHECK(cudaEventRecord(start));
    body();
    TROUPE_CUDA_CHECK(cudaEventRecord(stop));
    TROUPE_CUDA_CHECK(cudaEventSynchronize(stop));
    TROUPE_CUDA_CHECK(cudaEventElapsedTime(&m, start, stop));
  }
  TROUPE_CUDA_CHECK(cudaEventDestroy(start));
  TROUPE_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void copy_bandwidth() {
  const size_t bytes = size_t(4) << 30;
  void *src, *dst;
  TROUPE_CUDA_CHECK(cudaMalloc(&src, bytes));
  TROUPE_CUDA_CHECK(cudaMalloc(&dst, bytes));
  fill_random<<<4096, 256>>>(static_cast<__nv_bfloat16*>(src), int64_t(bytes / 2), 7);
  TROUPE_CUDA_CHECK(cudaGetLastError());
  const float ms = median_ms(2, 9, [&] {
    TROUPE_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
  });
  std::printf("copy: %.1f GiB device-to-device, median %.3f ms, %.0f GB/s (read + write)\n",
              double(bytes) / double(1 << 30), ms, 2.0 * double(bytes) / (ms * 1e-3) / 1e9);
  TROUPE_CUDA_CHECK(cudaFree(src));
  TROUPE_CUDA_CHECK(cudaFree(dst));
}

void gemm_rate() {
  const int n = 8192;
  const size_t count = size_t(n) * n;
  __nv_bfloat16 *a, *b, *c;
  TROUPE_CUDA_CHECK(cudaMalloc(&a, count * sizeof(__nv_bfloat16)));
  TROUPE_CUDA_CHECK(cudaMalloc(&b, count * sizeof(__nv_bfloat16)));
  TROUPE_CUDA_CHECK(cudaMalloc(&c, count * sizeof(__nv_bfloat16)));
  fill_random<<<4096, 256>>>(a, int64_t(count), 1);
  TROUPE_CUDA_CHECK(cudaGetLastError());
  fill_random<<<4096, 256>>>(b, int64_t(count), 2);
  TROUPE_CUDA_CHECK(cudaGetLastError());
  cublasHandle_t handle;
  TROUPE_CUDA_CHECK(cublasCreate(&handle));
  const float alpha = 1.0f, beta = 0.0f;
  const float ms = median_ms(3, 15, [&] {
    TROUPE_CUDA_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &alpha, a, CUDA_R_16BF,
                                   n, b, CUDA_R_16BF, n, &beta, c, CUDA_R_16BF, n,
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  });
  std::printf("gemm: bf16 %dx%dx%d (TN, fp32 accumulate), median %.3f ms, %.0f TFLOP/s\n", n, n, n,
              ms, 2.0 * n * double(n) * n / (ms * 1e-3) / 1e12);
  TROUPE_CUDA_CHECK(cublasDestroy(handle));
  TROUPE_CUDA_CHECK(cudaFree(a));
  TROUPE_CUDA_CHECK(cudaFree(b));
  TROUPE_CUDA_CHECK(cudaFree(c));
}

}  // namespace

int main() {
  cudaDeviceProp prop;
  TROUPE_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, %.0f MB L2\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize / 1e6);
  copy_bandwidth();
  gemm_rate();
  return 0;
}
