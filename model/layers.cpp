#include "model/layers.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/moe_routing.hpp"
#include "kernels/cpu/rms_norm.hpp"
#include "kernels/cpu/rope.hpp"
#include "kernels/cpu/swiglu.hpp"

namespace troupe {
namespace {

void add_bias(float* y, int rows, const std::vector<float>& bias) {
  if (bias.empty()) return;
  const int64_t n = int64_t(bias.size());
  for (int r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) y[r * n + i] += bias[size_t(i)];
}

}  // namespace

void attention_block(const attention_weights& w, const model_config& c, const float* x,
                     int tokens, kv_cache& cache, int layer, float* out) {
  const int heads = c.num_heads, kv_heads = c.num_kv_heads, hd = c.head_dim;
  const int64_t kv_dim = int64_t(kv_heads) * hd;
  const int start = cache.length();
  std::vector<float> q(size_t(tokens) * heads * hd), attn(q.size());
  float* k = cache.keys(layer) + start * kv_dim;
  float* v = cache.values(layer) + start * kv_dim;
  cpu::matmul(x, tokens, w.q, q.data());
  cpu::matmul(x, tokens, w.k, k);
  cpu::matmul(x, tokens, w.v, v);
  add_bias(q.data(), tokens, w.q_bias);
  add_bias(k, tokens, w.k_bias);
  add_bias(v, tokens, w.v_bias);
  cpu::rms_norm(q.data(), w.q_norm.data(), float(c.rms_norm_eps), tokens * heads, hd, q.data());
  cpu::rms_norm(k, w.k_norm.data(), float(c.rms_norm_eps), tokens * kv_heads, hd, k);
  std::vector<int> positions(static_cast<size_t>(tokens));
  for (int t = 0; t < tokens; ++t) positions[size_t(t)] = start + t;
  cpu::rope(q.data(), tokens, heads, hd, positions.data(), float(c.rope_theta));
  cpu::rope(k, tokens, kv_heads, hd, positions.data(), float(c.rope_theta));
  cpu::causal_attention(q.data(), tokens, heads, kv_heads, hd, cache.keys(layer),
                        cache.values(layer), start, attn.data());
  cpu::matmul(attn.data(), tokens, w.o, out);
  add_bias(out, tokens, w.o_bias);
}

void mlp_block(const mlp_weights& w, const float* x, int tokens, float* out) {
  const int64_t inter = w.gate.rows;
  std::vector<float> gate(static_cast<size_t>(tokens * inter)), up(gate.size());
  cpu::matmul(x, tokens, w.gate, gate.data());
  cpu::matmul(x, tokens, w.up, up.data());
  cpu::swiglu(gate.data(), up.data(), tokens * inter, gate.data());
  cpu::matmul(gate.data(), tokens, w.down, out);
}

void moe_block(const layer_weights& w, const model_config& c, const float* x, int tokens,
               float* out) {
  const int experts = c.num_experts, k = c.num_experts_per_tok, hidden = c.hidden_size;
  std::vector<float> logits(size_t(tokens) * experts);
  cpu::matmul(x, tokens, w.router, logits.data());
  std::vector<int> chosen(size_t(tokens) * k);
  std::vector<float> weight(chosen.size());
  for (int t = 0; t < tokens; ++t)
    cpu::route_top_k(logits.data() + int64_t(t) * experts, experts, k, c.norm_topk_prob,
                     chosen.data() + t * k, weight.data() + t * k);

  // Bucket (token, weight) pairs by expert, then run each expert once on its tokens.
  std::vector<std::vector<std::pair<int, float>>> routed(static_cast<size_t>(experts));
  for (int t = 0; t < tokens; ++t)
    for (int j = 0; j < k; ++j)
      routed[size_t(chosen[size_t(t * k + j)])].emplace_back(t, weight[size_t(t * k + j)]);
  std::fill(out, out + int64_t(tokens) * hidden, 0.0f);
  std::vector<float> gathered, expert_out;
  for (int e = 0; e < experts; ++e) {
    const auto& list = routed[size_t(e)];
    if (list.empty()) continue;
    const int n = int(list.size());
    gathered.resize(size_t(n) * hidden);
    expert_out.resize(gathered.size());
    for (int i = 0; i < n; ++i)
      std::memcpy(gathered.data() + int64_t(i) * hidden, x + int64_t(list[size_t(i)].first) * hidden,
                  sizeof(float) * size_t(hidden));
    mlp_block(w.experts[size_t(e)], gathered.data(), n, expert_out.data());
    for (int i = 0; i < n; ++i) {
      float* o = out + int64_t(list[size_t(i)].first) * hidden;
      const float* src = expert_out.data() + int64_t(i) * hidden;
      const float g = list[size_t(i)].second;
      for (int d = 0; d < hidden; ++d) o[d] += g * src[d];
    }
  }
}

}  // namespace troupe
