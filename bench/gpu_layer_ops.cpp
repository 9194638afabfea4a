// Where a decode step's time goes: each op of one decoder layer of a checkpoint's shape
// (random weights), plus lm_head and sampling, at batch 1, 32 and 128 with 600 positions
// of context, each timed alone: 20 calls captured in a CUDA graph, the graph replayed, the
// mean per call (GPU time as the decode graph sees it, host work excluded). A step is
// num_layers times the layer plus the tail, the layer's attention the decode_attention row
// (the qk_norm_rope and paged_attention rows are its parts, timed alone).
//   bench_gpu_layer_ops CONFIG_DIR
#include <cstdio>
#include <random>
#include <vector>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/fused_moe.cuh"
#include "kernels/cuda/matmul.cuh"
#include "kernels/cuda/moe_routing.cuh"
#include "kernels/cuda/paged_attention.cuh"
#include "kernels/cuda/qk_norm_rope.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/sampling.cuh"
#include "model/cuda/gpu_weights.hpp"

using namespace troupe;
using bf16 = __nv_bfloat16;

namespace {

cudaStream_t stream;

template <class F>
float mean_us(F&& f) {
  constexpr int calls = 20, replays = 5;
  f();  // outside the capture: first-call set-up
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  TROUPE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < calls; ++i) f();
  TROUPE_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  TROUPE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  TROUPE_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  cudaEvent_t a, b;
  TROUPE_CUDA_CHECK(cudaEventCreate(&a));
  TROUPE_CUDA_CHECK(cudaEventCreate(&b));
  TROUPE_CUDA_CHECK(cudaEventRecord(a, stream));
  for (int i = 0; i < replays; ++i) TROUPE_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  TROUPE_CUDA_CHECK(cudaEventRecord(b, stream));
  TROUPE_CUDA_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  TROUPE_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  TROUPE_CUDA_CHECK(cudaGraphExecDestroy(exec));
  TROUPE_CUDA_CHECK(cudaGraphDestroy(graph));
  return ms * 1000 / (calls * replays);
}

// Zeroed device memory that lives until the process ends (a bench).
template <class T>
T* zeros(size_t n) {
  void* p = nullptr;
  TROUPE_CUDA_CHECK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)));
  TROUPE_CUDA_CHECK(cudaMemset(p, 0, std::max<size_t>(n, 1) * sizeof(T)));
  return static_cast<T*>(p);
}

template <class T>
T* upload(const std::vector<T>& v) {
  T* d = zeros<T>(v.size());
  TROUPE_CUDA_CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: bench_gpu_layer_ops CONFIG_DIR\n");
    return 2;
  }
  auto loaded = load_gpu_weights(argv[1], true);
  if (!loaded) {
    std::fprintf(stderr, "%s\n", loaded.err().message.c_str());
    return 1;
  }
  const gpu_weights& w = **loaded;
  const model_config& c = w.config;
  const gpu_layer_weights& l = w.layers[0];
  cublasHandle_t cublas;
  TROUPE_CUDA_CHECK(cublasCreate(&cublas));
  TROUPE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  TROUPE_CUDA_CHECK(cublasSetStream(cublas, stream));
  TROUPE_CUDA_CHECK(cublasSetWorkspace(cublas, zeros<char>(size_t(32) << 20), size_t(32) << 20));
  const int h = c.hidden_size, q_dim = c.num_heads * c.head_dim, kv_dim = c.num_kv_heads * c.head_dim;
  const int qkv_dim = q_dim + 2 * kv_dim, e = c.num_experts, k = c.num_experts_per_tok;
  const int context = 600, block_size = 16, blocks_each = 64;
  std::printf("| op | batch 1 (us) | batch 32 (us) | batch 128 (us) |\n| --- | --- | --- | --- |\n");
  std::vector<std::vector<float>> rows(11);
  for (int n : {1, 32, 128}) {
    float* residual = zeros<float>(size_t(n) * h);
    bf16 *normed = zeros<bf16>(size_t(n) * h), *qkv = zeros<bf16>(size_t(n) * qkv_dim);
    bf16 *attn = zeros<bf16>(size_t(n) * q_dim), *out = zeros<bf16>(size_t(n) * h);
    float *router = zeros<float>(size_t(n) * e), *route_weights = zeros<float>(size_t(n) * k);
    int* chosen = zeros<int>(size_t(n) * k);
    void* moe_workspace = zeros<char>(cuda::fused_moe_workspace_bytes(n, k, e, h, c.moe_intermediate_size));
    // fused_moe gets random routing (k distinct experts a token), as a trained router
    // spreads a batch: the router above sees zeros and would send every token to 0..k-1.
    std::vector<int> routed(size_t(n) * k);
    for (int t = 0; t < n; ++t)
      for (int j = 0; j < k; ++j) routed[size_t(t * k + j)] = j * (e / k) + (t * 5) % (e / k);
    int* d_routed = upload(routed);
    const std::vector<float> equal(size_t(n) * k, 1.0f / float(k));
    float* d_equal = upload(equal);
    std::vector<int> tables(size_t(n) * blocks_each), lens(size_t(n), context), positions(size_t(n), context - 1);
    std::vector<int> slots(size_t(n), 0);
    for (int s = 0; s < n; ++s) {
      for (int b = 0; b < blocks_each; ++b) tables[size_t(s * blocks_each + b)] = s * blocks_each + b;
      slots[size_t(s)] =
          tables[size_t(s * blocks_each + (context - 1) / block_size)] * block_size + (context - 1) % block_size;
    }
    int *d_tables = upload(tables), *d_lens = upload(lens), *d_positions = upload(positions), *d_slots = upload(slots);
    const size_t pool = size_t(n) * blocks_each * block_size * kv_dim;
    bf16 *keys = zeros<bf16>(pool), *values = zeros<bf16>(pool);
    float* attn_workspace =
        zeros<float>(cuda::paged_attention_workspace_floats(n, c.num_heads, c.num_kv_heads, c.head_dim, 1024));
    float* logits = zeros<float>(size_t(n) * c.vocab_size);
    // Sampling sees logits like a model's (random, spread): zeros would tie every token.
    std::vector<float> spread(size_t(n) * c.vocab_size);
    std::mt19937 gen(5);
    std::normal_distribution<float> normal(0.0f, 4.0f);
    for (float& x : spread) x = normal(gen);
    float* sample_logits = upload(spread);
    std::vector<float> temperature(size_t(n), 0.7f), top_p(size_t(n), 0.9f), ones(size_t(n), 1.0f),
        nil(size_t(n), 0.0f);
    std::vector<int> top_k(size_t(n), 0), no_logprobs(size_t(n), -1), offsets(size_t(n) + 1, 0);
    const std::vector<int> unmasked(size_t(n), -1);
    std::vector<double> uniform(size_t(n), 0.5);
    const cuda::sampling_rows params{upload(temperature),
                                     upload(top_p),
                                     upload(top_k),
                                     upload(nil),
                                     upload(ones),
                                     upload(nil),
                                     upload(nil),
                                     upload(uniform),
                                     upload(no_logprobs),
                                     upload(offsets),
                                     zeros<int>(1),
                                     zeros<int>(1),
                                     zeros<int>(1),
                                     zeros<float>(1),
                                     upload(unmasked),
                                     nullptr,
                                     0};
    void* sampling_workspace = zeros<char>(cuda::sampling_workspace_bytes(n, c.vocab_size));
    int* tokens = zeros<int>(size_t(n));
    float *logprob = zeros<float>(size_t(n)), *top_lp = zeros<float>(size_t(n) * 20);
    int* top_ids = zeros<int>(size_t(n) * 20);
    const float eps = float(c.rms_norm_eps);
    size_t r = 0;
    rows[r++].push_back(mean_us([&] { cuda::rms_norm(out, residual, l.input_norm, eps, n, h, normed, stream); }));
    rows[r++].push_back(mean_us([&] { cuda::matmul(cublas, normed, n, h, l.qkv, qkv_dim, dtype::bf16, qkv); }));
    rows[r++].push_back(mean_us([&] {
      cuda::qk_norm_rope(qkv, qkv + q_dim, l.q_norm, l.k_norm, eps, n, c.num_heads, c.num_kv_heads, c.head_dim, qkv_dim,
                         qkv_dim, d_positions, float(c.rope_theta), c.rotary_dim,
                         {qkv + q_dim + kv_dim, qkv_dim, d_slots, keys, values}, stream);
    }));
    rows[r++].push_back(mean_us([&] {
      cuda::paged_attention(qkv, qkv_dim, n, c.num_heads, c.num_kv_heads, c.head_dim,
                            {keys, values, block_size, d_tables, blocks_each, d_lens, 1024}, attn_workspace, attn,
                            stream);
    }));
    rows[r++].push_back(mean_us([&] {
      cuda::decode_attention(
          qkv, qkv + q_dim, l.q_norm, l.k_norm, eps, n, c.num_heads, c.num_kv_heads, c.head_dim, qkv_dim, qkv_dim,
          d_positions, float(c.rope_theta), c.rotary_dim, {qkv + q_dim + kv_dim, qkv_dim, d_slots, keys, values},
          {keys, values, block_size, d_tables, blocks_each, d_lens, 1024}, attn_workspace, attn, stream);
    }));
    rows[r++].push_back(mean_us([&] { cuda::matmul(cublas, attn, n, q_dim, l.o, h, dtype::bf16, out); }));
    rows[r++].push_back(mean_us([&] { cuda::matmul(cublas, normed, n, h, l.router, e, dtype::f32, router); }));
    rows[r++].push_back(
        mean_us([&] { cuda::route_top_k(router, n, e, k, c.norm_topk_prob, false, chosen, route_weights, stream); }));
    rows[r++].push_back(mean_us([&] {
      cuda::fused_moe(normed, n, h, d_routed, d_equal, k, l.w13, l.w2, c.moe_intermediate_size, 0, e, moe_workspace,
                      out, stream, nullptr);
    }));
    rows[r++].push_back(
        mean_us([&] { cuda::matmul(cublas, normed, n, h, w.lm_head, c.vocab_size, dtype::f32, logits); }));
    rows[r++].push_back(mean_us([&] {
      cuda::sample_tokens(sample_logits, n, c.vocab_size, params, sampling_workspace, tokens, logprob, top_ids, top_lp,
                          stream);
    }));
  }
  const char* names[] = {"rms_norm (x2 per layer)",
                         "qkv matmul",
                         "qk_norm_rope + KV cache write",
                         "paged_attention, 600 positions",
                         "decode_attention: the two above as the step runs them (one launch at batch 1)",
                         "o matmul",
                         "router matmul",
                         "route_top_k",
                         "fused_moe",
                         "lm_head (once per step)",
                         "sample_tokens, top_p 0.9 (once per step)"};
  for (size_t i = 0; i < rows.size(); ++i)
    std::printf("| %s | %.1f | %.1f | %.1f |\n", names[i], rows[i][0], rows[i][1], rows[i][2]);
  return 0;
}
