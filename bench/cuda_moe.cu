// fused_moe on the Qwen3-30B-A3B shape (hidden 2048, 128 experts, top-8, inter 768) at
// decode and prefill batch sizes with random routing, graph-safe (no cuBLAS handle) and
// with a handle (moe_grouped's batched cuBLAS GEMMs from 32 pairs per expert): the median
// of 20 event-timed calls after 5 warm-ups. L2 is flushed before each call by reading a
// buffer four times its size, so the weights come from HBM as they do when 48 layers take
// turns, and L2 holds clean lines as it then does (a memset would leave dirty lines whose
// write-back the call would pay for). GB/s counts the bytes of the experts the batch
// chose, TFLOP/s the three projections of every (token, expert) pair.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include <cublas_v2.h>
#include <cuda_bf16.h>

#include "bench/cuda_bench_support.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/fused_moe.cuh"

using namespace troupe::bench;

namespace {

constexpr int hidden = 2048, experts = 128, k = 8, inter = 768;
constexpr int max_tokens = 4096;

// k distinct experts per token, weights summing to 1.
void random_routing(std::vector<int>& chosen, std::vector<float>& weights) {
  std::mt19937 gen(42);
  std::uniform_real_distribution<float> weight(0.05f, 1.0f);
  std::vector<int> ids(experts);
  std::iota(ids.begin(), ids.end(), 0);
  for (int t = 0; t < max_tokens; ++t) {
    std::shuffle(ids.begin(), ids.end(), gen);
    float sum = 0.0f;
    for (int j = 0; j < k; ++j) {
      chosen.push_back(ids[size_t(j)]);
      weights.push_back(weight(gen));
      sum += weights.back();
    }
    for (int j = 0; j < k; ++j) weights[weights.size() - size_t(k) + size_t(j)] /= sum;
  }
}

}  // namespace

int main() {
  const cudaDeviceProp prop = describe_device();
  const size_t w13_size = size_t(experts) * 2 * inter * hidden;
  const size_t w2_size = size_t(experts) * hidden * inter;
  __nv_bfloat16* w13 = device_random(w13_size, 1, 0.03f);
  __nv_bfloat16* w2 = device_random(w2_size, 2, 0.03f);
  __nv_bfloat16* x = device_random(size_t(max_tokens) * hidden, 3, 1.0f);
  __nv_bfloat16* out;
  TROUPE_CUDA_CHECK(cudaMalloc(&out, size_t(max_tokens) * hidden * sizeof(__nv_bfloat16)));
  std::vector<int> chosen;
  std::vector<float> weights;
  random_routing(chosen, weights);
  int* d_chosen;
  float* d_weights;
  TROUPE_CUDA_CHECK(cudaMalloc(&d_chosen, chosen.size() * sizeof(int)));
  TROUPE_CUDA_CHECK(cudaMalloc(&d_weights, weights.size() * sizeof(float)));
  TROUPE_CUDA_CHECK(cudaMemcpy(d_chosen, chosen.data(), chosen.size() * sizeof(int), cudaMemcpyHostToDevice));
  TROUPE_CUDA_CHECK(cudaMemcpy(d_weights, weights.data(), weights.size() * sizeof(float), cudaMemcpyHostToDevice));
  void* workspace;
  TROUPE_CUDA_CHECK(
      cudaMalloc(&workspace, troupe::cuda::fused_moe_workspace_bytes(max_tokens, k, experts, hidden, inter)));
  const l2_flush flush(size_t(4) * prop.l2CacheSize);
  cublasHandle_t cublas;
  TROUPE_CUDA_CHECK(cublasCreate(&cublas));

  auto median_seconds = [&](int tokens, cublasHandle_t handle) {
    auto call = [&] {
      troupe::cuda::fused_moe(x, tokens, hidden, d_chosen, d_weights, k, w13, w2, inter, 0, experts, workspace, out,
                              nullptr, handle);
    };
    return median_ms(5, 20, call, flush) * 1e-3;
  };

  for (int tokens : {1, 8, 32, 128, 512, 4096}) {
    std::vector<bool> active(experts, false);
    for (int p = 0; p < tokens * k; ++p) active[size_t(chosen[size_t(p)])] = true;
    const int used = int(std::count(active.begin(), active.end(), true));
    const double bytes = double(used) * 3 * inter * hidden * sizeof(__nv_bfloat16);
    const double flops = 2.0 * tokens * k * 3 * double(inter) * hidden;
    std::printf("tokens %4d: %3d experts, %6.1f MB of weights", tokens, used, bytes / 1e6);
    for (cublasHandle_t handle : {static_cast<cublasHandle_t>(nullptr), cublas}) {
      const double s = median_seconds(tokens, handle);
      std::printf("; %s %7.3f ms, %5.0f GB/s, %5.1f TFLOP/s", handle == nullptr ? "graph-safe" : "with cuBLAS", s * 1e3,
                  bytes / s / 1e9, flops / s / 1e12);
    }
    std::printf("\n");
  }
  TROUPE_CUDA_CHECK(cublasDestroy(cublas));
  for (void* p : {static_cast<void*>(w13), static_cast<void*>(w2), static_cast<void*>(x), static_cast<void*>(out),
                  static_cast<void*>(d_chosen), static_cast<void*>(d_weights), workspace})
    TROUPE_CUDA_CHECK(cudaFree(p));
  return 0;
}
