// The Gated DeltaNet ops of one linear-attention layer on the Qwen3.5-35B-A3B shape (16 key
// heads, 32 value heads, dims 128, conv_dim 8192, kernel 4): decode at batch 1 to 256 and a
// 4,096-token prefill (one prompt, and 16 of 256), the median of 20 event-timed calls after
// 5 warm-ups with L2 flushed before each (a step's 30 linear layers hold 60 MiB of state a
// sequence: none of it is in L2 when its layer comes). Decode's GB/s counts the delta-rule
// state read and written once, 2 MiB each way a sequence, and its inputs and outputs; the
// H200 peaks near 4.8 TB/s.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <cuda_bf16.h>

#include "bench/cuda_bench_support.cuh"
#include "kernels/cuda/causal_conv1d.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/gated_delta_rule.cuh"
#include "kernels/cuda/gated_delta_rule_chunked.cuh"
#include "kernels/cuda/gated_rms_norm.cuh"

using namespace troupe;
using namespace troupe::bench;

namespace {

constexpr cuda::delta_rule_heads heads{16, 32, 128, 128};
constexpr int key_width = heads.key_heads * heads.key_dim, value_width = heads.value_heads * heads.value_dim;
constexpr int conv_dim = 2 * key_width + value_width, conv_kernel = 4;
constexpr int max_tokens = 4096, max_seqs = 256;
constexpr double peak_bytes_per_s = 4.8e12;

// The arrays of a step of `seqs` sequences of `len` tokens each on slots 0..seqs-1, all
// continuing (a non-zero first position); len 1 is a decode step.
struct step {
  int* query_starts;
  int* starts;
  int* slots;
  cuda::state_sequences view;
};

step make_step(int seqs, int len) {
  std::vector<int> q(static_cast<size_t>(seqs) + 1), starts(static_cast<size_t>(seqs), 100),
      slots(static_cast<size_t>(seqs));
  for (int s = 0; s <= seqs; ++s) q[size_t(s)] = s * len;
  for (int s = 0; s < seqs; ++s) slots[size_t(s)] = s;
  step st{device_copy(q), device_copy(starts), device_copy(slots), {}};
  st.view = {seqs, len, len == 1 ? nullptr : st.query_starts, st.starts, st.slots};
  return st;
}

void free_step(const step& st) {
  for (int* p : {st.query_starts, st.starts, st.slots}) TROUPE_CUDA_CHECK(cudaFree(p));
}

}  // namespace

int main() {
  const cudaDeviceProp prop = describe_device();
  const size_t state_floats = size_t(heads.value_heads) * heads.key_dim * heads.value_dim;
  __nv_bfloat16* mixed = device_random(size_t(max_tokens) * conv_dim, 1, 1.0f);  // the conv's input
  __nv_bfloat16* qkv = device_random(size_t(max_tokens) * conv_dim, 2, 1.0f);    // its output
  __nv_bfloat16* z = device_random(size_t(max_tokens) * value_width, 3, 1.0f);
  __nv_bfloat16* core = device_random(size_t(max_tokens) * value_width, 4, 1.0f);
  __nv_bfloat16* normed;
  TROUPE_CUDA_CHECK(cudaMalloc(&normed, size_t(max_tokens) * value_width * sizeof(__nv_bfloat16)));
  // The gates' inputs, b then a, a token's row.
  __nv_bfloat16* gates = device_random(size_t(max_tokens) * 2 * heads.value_heads, 5, 1.0f);
  std::vector<float> neg_decay_rate(size_t(heads.value_heads), -0.05f), dt_bias(neg_decay_rate.size(), 0.0f);
  std::vector<float> conv_w(size_t(conv_dim) * conv_kernel, 0.25f), norm_w(size_t(heads.value_dim), 1.0f);
  float* d_neg_decay_rate = device_copy(neg_decay_rate);
  float* d_dt_bias = device_copy(dt_bias);
  float* d_conv_w = device_copy(conv_w);
  float* d_norm_w = device_copy(norm_w);
  float *delta_states, *conv_states;
  TROUPE_CUDA_CHECK(cudaMalloc(&delta_states, size_t(max_seqs) * state_floats * sizeof(float)));
  TROUPE_CUDA_CHECK(cudaMemset(delta_states, 0, size_t(max_seqs) * state_floats * sizeof(float)));
  float* chunk_sums;
  TROUPE_CUDA_CHECK(
      cudaMalloc(&chunk_sums, cuda::gated_delta_rule_chunked_workspace_floats(max_tokens, heads) * sizeof(float)));
  TROUPE_CUDA_CHECK(cudaMalloc(&conv_states, size_t(max_seqs) * (conv_kernel - 1) * conv_dim * sizeof(float)));
  TROUPE_CUDA_CHECK(cudaMemset(conv_states, 0, size_t(max_seqs) * (conv_kernel - 1) * conv_dim * sizeof(float)));
  const l2_flush flush(size_t(4) * prop.l2CacheSize);
  const cuda::delta_rule_inputs in{
      qkv,   qkv + key_width,       qkv + 2 * key_width, conv_dim, gates + heads.value_heads,
      gates, 2 * heads.value_heads, d_neg_decay_rate,    d_dt_bias};

  // Microseconds a call of each op for `seqs` sequences of `len` tokens.
  struct timings {
    double conv, delta, norm, chunked;
  };
  auto time_step = [&](int seqs, int len) {
    const step st = make_step(seqs, len);
    const int tokens = seqs * len;
    auto us = [&](auto&& call) { return double(median_ms(5, 20, call, flush)) * 1e3; };
    const timings t{us([&] {
                      cuda::causal_conv1d_silu(mixed, conv_dim, conv_dim, d_conv_w, conv_kernel, st.view, conv_states,
                                               qkv, nullptr);
                    }),
                    us([&] { cuda::gated_delta_rule(in, heads, st.view, delta_states, core, nullptr); }), us([&] {
                      cuda::gated_rms_norm(core, z, value_width, d_norm_w, 1e-6f, tokens, heads.value_heads,
                                           heads.value_dim, normed, nullptr);
                    }),
                    len > 1 ? us([&] {
                      cuda::gated_delta_rule_chunked(in, heads, st.view, delta_states, chunk_sums, core, nullptr);
                    })
                            : 0.0};
    TROUPE_CUDA_CHECK(cudaDeviceSynchronize());
    free_step(st);
    return t;
  };

  std::printf("decode (one token a sequence), us a call:\n");
  for (int batch : {1, 32, 128, 256}) {
    const timings t = time_step(batch, 1);
    const double bytes =
        double(batch) * (2.0 * state_floats * sizeof(float) + (conv_dim + value_width) * sizeof(__nv_bfloat16) +
                         2.0 * heads.value_heads * sizeof(float));
    const double gb_s = bytes / (t.delta * 1e-6) / 1e9;
    std::printf(
        "  batch %3d: causal_conv1d %7.1f, gated_delta_rule %8.1f (%5.0f GB/s, %3.0f%% of %.1f TB/s), "
        "gated_rms_norm %6.1f\n",
        batch, t.conv, t.delta, gb_s, 100.0 * gb_s * 1e9 / peak_bytes_per_s, peak_bytes_per_s / 1e12, t.norm);
  }
  std::printf("prefill of %d tokens, us a call:\n", max_tokens);
  for (int seqs : {1, 16}) {
    const timings t = time_step(seqs, max_tokens / seqs);
    std::printf(
        "  %2d x %4d tokens: causal_conv1d %8.1f, gated_delta_rule %9.1f (chunked %8.1f), gated_rms_norm "
        "%7.1f\n",
        seqs, max_tokens / seqs, t.conv, t.delta, t.chunked, t.norm);
  }
  for (void* p : {static_cast<void*>(mixed), static_cast<void*>(qkv), static_cast<void*>(z), static_cast<void*>(core),
                  static_cast<void*>(normed), static_cast<void*>(gates), static_cast<void*>(d_neg_decay_rate),
                  static_cast<void*>(d_dt_bias), static_cast<void*>(d_conv_w), static_cast<void*>(d_norm_w),
                  static_cast<void*>(delta_states), static_cast<void*>(conv_states), static_cast<void*>(chunk_sums)})
    TROUPE_CUDA_CHECK(cudaFree(p));
  return 0;
}
