#pragma once
// What the CUDA op benchmarks share: random device data, an L2 flush, event timing.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <cuda_bf16.h>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/fill_uniform.cuh"

namespace troupe::bench {

// The device the figures come from, printed as the benchmarks' first line.
inline cudaDeviceProp describe_device() {
  cudaDeviceProp prop;
  TROUPE_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, %.0f MB L2\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize / 1e6);
  return prop;
}

// n bf16 values uniform in [-scale, scale), made on the device (no host copy).
inline __nv_bfloat16* device_random(size_t n, uint32_t seed, float scale) {
  __nv_bfloat16* p;
  TROUPE_CUDA_CHECK(cudaMalloc(&p, n * sizeof(__nv_bfloat16)));
  cuda::fill_uniform(p, 0, int64_t(n), scale, seed, nullptr);
  return p;
}

// A device copy of `host`, for the caller to cudaFree.
template <class T>
T* device_copy(const std::vector<T>& host) {
  T* p;
  TROUPE_CUDA_CHECK(cudaMalloc(&p, host.size() * sizeof(T)));
  TROUPE_CUDA_CHECK(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return p;
}

// Reads n float4s into L2. The buffer is zeros, so the sum is never 1 and nothing is
// written, but the compiler cannot know that and must load every element. Reading (not
// writing) evicts what a timed call would find in L2 without leaving dirty lines behind
// whose write-back the call would pay for.
static __global__ void read_through_l2(const float4* data, int64_t n, float* sink) {
  float sum = 0.0f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float4 v = data[i];
    sum += v.x + v.y + v.z + v.w;
  }
  if (sum == 1.0f) *sink = sum;
}

// Evicts L2 before a timed call by reading a zeroed buffer of `bytes` (a few times L2).
class l2_flush {
 public:
  explicit l2_flush(size_t bytes) : bytes_(bytes / 16 * 16) {
    TROUPE_CUDA_CHECK(cudaMalloc(&buffer_, bytes_));
    TROUPE_CUDA_CHECK(cudaMemset(buffer_, 0, bytes_));
    TROUPE_CUDA_CHECK(cudaMalloc(&sink_, sizeof(float)));
    TROUPE_CUDA_CHECK(cudaDeviceGetAttribute(&sms_, cudaDevAttrMultiProcessorCount, 0));
  }
  l2_flush(const l2_flush&) = delete;
  l2_flush& operator=(const l2_flush&) = delete;
  ~l2_flush() {
    cudaFree(buffer_);
    cudaFree(sink_);
  }
  void operator()() const {
    read_through_l2<<<4 * sms_, 1024>>>(static_cast<const float4*>(buffer_), int64_t(bytes_ / 16), sink_);
    TROUPE_CUDA_CHECK(cudaGetLastError());
  }

 private:
  size_t bytes_;
  void* buffer_ = nullptr;
  float* sink_ = nullptr;
  int sms_ = 0;
};

// Median milliseconds of `runs` event-timed calls of body() after `warmups`; before()
// runs untimed ahead of each timed call (an L2 flush).
template <class F, class B>
float median_ms(int warmups, int runs, F&& body, B&& before) {
  cudaEvent_t start, stop;
  TROUPE_CUDA_CHECK(cudaEventCreate(&start));
  TROUPE_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < warmups; ++i) body();
  std::vector<float> ms(size_t(runs), 0.0f);
  for (float& m : ms) {
    before();
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

template <class F>
float median_ms(int warmups, int runs, F&& body) {
  return median_ms(warmups, runs, body, [] {});
}

}  // namespace troupe::bench
