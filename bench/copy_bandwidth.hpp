#pragma once
// The device's copy bandwidth, the ceiling the GPU benchmarks measure themselves against.
// Host code only, so plain C++ benchmarks can include it too.
#include <algorithm>
#include <vector>

#include <cuda_runtime.h>

#include "kernels/cuda/check.cuh"

namespace troupe::bench {

// Device-to-device cudaMemcpy of `bytes`, bytes read plus written per second (GB/s): the
// median of `runs` copies timed with events, after two warm-ups.
inline double copy_bandwidth_gbs(size_t bytes, int runs) {
  void *src, *dst;
  TROUPE_CUDA_CHECK(cudaMalloc(&src, bytes));
  TROUPE_CUDA_CHECK(cudaMalloc(&dst, bytes));
  TROUPE_CUDA_CHECK(cudaMemset(src, 1, bytes));
  cudaEvent_t start, stop;
  TROUPE_CUDA_CHECK(cudaEventCreate(&start));
  TROUPE_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> gbs;
  for (int i = 0; i < 2 + runs; ++i) {
    TROUPE_CUDA_CHECK(cudaEventRecord(start));
    TROUPE_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
    TROUPE_CUDA_CHECK(cudaEventRecord(stop));
    TROUPE_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    TROUPE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (i >= 2) gbs.push_back(2.0 * double(bytes) / (double(ms) * 1e-3) / 1e9);
  }
  TROUPE_CUDA_CHECK(cudaEventDestroy(start));
  TROUPE_CUDA_CHECK(cudaEventDestroy(stop));
  TROUPE_CUDA_CHECK(cudaFree(src));
  TROUPE_CUDA_CHECK(cudaFree(dst));
  std::sort(gbs.begin(), gbs.end());
  return gbs[gbs.size() / 2];
}

}  // namespace troupe::bench
