// Prefill attention (kernels/cuda/flash_attention) on one causal sequence of 512, 2048 and
// 4096 new tokens with Qwen3-30B-A3B's attention shape: 32 query heads, 4 KV heads,
// head_dim 128, keys in 16-position blocks scattered over the pool. Each size is the
// median of 20 event-timed runs after 5 warm-ups; TFLOP/s counts the causal half of
// Q K^T and P V, 4 * n^2 / 2 * heads * head_dim. Then decode attention
// (kernels/cuda/paged_attention) of one sequence of that shape at 512 and 4096 positions,
// and of batches of 32 and 128 sequences at 640 and 4096, as a decode step runs it: 20 calls (layers) captured in a
// CUDA graph, the median of 20 replays after 5 warm-ups, per call.
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
#include "kernels/cuda/paged_attention.cuh"

using namespace troupe::bench;

namespace {

void prefill(int n) {
  const int heads = 32, kv_heads = 4, head_dim = 128, block_size = 16;
  const int blocks = (n + block_size - 1) / block_size;
  const size_t pool = size_t(blocks) * block_size * kv_heads * head_dim;
  __nv_bfloat16* q = device_random(size_t(n) * heads * head_dim, 1, 1.0f);
  __nv_bfloat16* keys = device_random(pool, 2, 1.0f);
  __nv_bfloat16* values = device_random(pool, 3, 1.0f);
  __nv_bfloat16* out;
  TROUPE_CUDA_CHECK(cudaMalloc(&out, size_t(n) * heads * head_dim * sizeof(__nv_bfloat16)));
  std::vector<int> order(static_cast<size_t>(blocks));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(4));
  int* table = device_copy(order);
  int* query_starts = device_copy(std::vector<int>{0, n});
  int* positions_start = device_copy(std::vector<int>{0});

  const troupe::cuda::flash_attention_batch batch{keys, values,       block_size,      table, blocks,
                                                  1,    query_starts, positions_start, n};
  const float ms =
      median_ms(5, 20, [&] { troupe::cuda::flash_attention(q, heads, kv_heads, head_dim, batch, out, nullptr); });
  const double flops = 4.0 * double(n) * n / 2 * heads * head_dim;
  std::printf("flash_attention: %d tokens, heads %d/%d, head_dim %d: median %.3f ms, %.1f TFLOP/s\n", n, heads,
              kv_heads, head_dim, ms, flops / (ms * 1e-3) / 1e12);
  for (void* p : std::initializer_list<void*>{q, keys, values, out, table, query_starts, positions_start})
    TROUPE_CUDA_CHECK(cudaFree(p));
}

// `seqs` sequences of `context` positions each. Each call reads its own pool, as each
// layer of a decode step does, and L2 is flushed before each replay: keys and values come
// from memory, not from the previous call.
void decode(int seqs, int context) {
  const int heads = 32, kv_heads = 4, head_dim = 128, block_size = 16, calls = 20;
  const int blocks = (context + block_size - 1) / block_size;
  const size_t pool = size_t(seqs) * blocks * block_size * kv_heads * head_dim;
  __nv_bfloat16* q = device_random(size_t(seqs) * heads * head_dim, 1, 1.0f);
  __nv_bfloat16* keys = device_random(pool * calls, 2, 1.0f);
  __nv_bfloat16* values = device_random(pool * calls, 3, 1.0f);
  __nv_bfloat16* out;
  TROUPE_CUDA_CHECK(cudaMalloc(&out, size_t(seqs) * heads * head_dim * sizeof(__nv_bfloat16)));
  const size_t workspace_floats =
      troupe::cuda::paged_attention_workspace_floats(seqs, heads, kv_heads, head_dim, context);
  float* workspace;
  TROUPE_CUDA_CHECK(cudaMalloc(&workspace, workspace_floats * sizeof(float)));
  std::vector<int> order(size_t(seqs) * blocks);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(4));
  int* table = device_copy(order);
  int* seq_lens = device_copy(std::vector<int>(size_t(seqs), context));
  int l2_bytes = 0;
  TROUPE_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, 0));
  const l2_flush flush(size_t(4) * size_t(l2_bytes));

  cudaStream_t stream;
  TROUPE_CUDA_CHECK(cudaStreamCreate(&stream));
  auto attend = [&](int call) {
    const troupe::cuda::paged_kv_batch kv{
        keys + pool * call, values + pool * call, block_size, table, blocks, seq_lens, context};
    troupe::cuda::paged_attention(q, heads * head_dim, seqs, heads, kv_heads, head_dim, kv, workspace, out, stream);
  };
  attend(0);  // outside the capture: first-call set-up
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  TROUPE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < calls; ++i) attend(i);
  TROUPE_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  TROUPE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  const float ms = median_ms(
      5, 20, [&] { TROUPE_CUDA_CHECK(cudaGraphLaunch(exec, nullptr)); }, flush);
  const double us = ms * 1000 / calls, bytes = 2.0 * seqs * context * kv_heads * head_dim * sizeof(__nv_bfloat16);
  std::printf(
      "paged_attention: %d sequences, %d positions, heads %d/%d, head_dim %d: median %.2f us a call, "
      "%.0f GB/s of keys and values\n",
      seqs, context, heads, kv_heads, head_dim, us, bytes / (us * 1e-6) / 1e9);
  TROUPE_CUDA_CHECK(cudaGraphExecDestroy(exec));
  TROUPE_CUDA_CHECK(cudaGraphDestroy(graph));
  TROUPE_CUDA_CHECK(cudaStreamDestroy(stream));
  for (void* p : std::initializer_list<void*>{q, keys, values, out, workspace, table, seq_lens})
    TROUPE_CUDA_CHECK(cudaFree(p));
}

}  // namespace

int main() {
  describe_device();
  for (int n : {512, 2048, 4096}) prefill(n);
  for (int context : {512, 4096}) decode(1, context);
  for (int seqs : {32, 128})
    for (int context : {640, 4096}) decode(seqs, context);
  return 0;
}
