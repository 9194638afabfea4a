// Prefill attention (kernels/cuda/flash_attention) on one causal sequence of 512, 2048 and
// 4096 new tokens with Qwen3-30B-A3B's attention shape: 32 query heads, 4 KV heads,
// head_dim 128, keys in 16-position blocks scattered over the pool. Each size is the
// median of 20 event-timed runs after 5 warm-ups; TFLOP/s counts the causal half of
// Q K^T and P V, 4 * n^2 / 2 * heads * head_dim.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <numeric>
#include <random>
#include <vector>

#include <cuda_bf16.h>

#include "bench/cuda_bench_support.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/flash_attention.cuh"

using namespace troupe::bench;

namespace {

template <class T>
T* device_copy(const std::vector<T>& host) {
  T* ptr;
  TROUPE_CUDA_CHECK(cudaMalloc(&ptr, host.size() * sizeof(T)));
  TROUPE_CUDA_CHECK(cudaMemcpy(ptr, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return ptr;
}

__nv_bfloat16* random_bf16(size_t n, uint32_t seed) {
  __nv_bfloat16* x;
  TROUPE_CUDA_CHECK(cudaMalloc(&x, n * sizeof(__nv_bfloat16)));
  troupe::cuda::fill_uniform(x, int64_t(n), 1.0f, seed, nullptr);
  return x;
}

void prefill(int n) {
  const int heads = 32, kv_heads = 4, head_dim = 128, block_size = 16;
  const int blocks = (n + block_size - 1) / block_size;
  const size_t pool = size_t(blocks) * block_size * kv_heads * head_dim;
  __nv_bfloat16* q = random_bf16(size_t(n) * heads * head_dim, 1);
  __nv_bfloat16* keys = random_bf16(pool, 2);
  __nv_bfloat16* values = random_bf16(pool, 3);
  __nv_bfloat16* out;
  TROUPE_CUDA_CHECK(cudaMalloc(&out, size_t(n) * heads * head_dim * sizeof(__nv_bfloat16)));
  std::vector<int> order(static_cast<size_t>(blocks));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(4));
  int* table = device_copy(order);
  int* query_starts = device_copy(std::vector<int>{0, n});
  int* positions_start = device_copy(std::vector<int>{0});

  const troupe::cuda::flash_attention_batch batch{keys, values, block_size, table, blocks, 1,
                                                  query_starts, positions_start, n};
  const float ms = median_ms(5, 20, [&] {
    troupe::cuda::flash_attention(q, heads, kv_heads, head_dim, batch, out, nullptr);
  });
  const double flops = 4.0 * double(n) * n / 2 * heads * head_dim;
  std::printf("flash_attention: %d tokens, heads %d/%d, head_dim %d: median %.3f ms, %.1f TFLOP/s\n",
              n, heads, kv_heads, head_dim, ms, flops / (ms * 1e-3) / 1e12);
  for (void* p : std::initializer_list<void*>{q, keys, values, out, table, query_starts, positions_start})
    TROUPE_CUDA_CHECK(cudaFree(p));
}

}  // namespace

int main() {
  describe_device();
  for (int n : {512, 2048, 4096}) prefill(n);
  return 0;
}
