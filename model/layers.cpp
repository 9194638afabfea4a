#include "model/layers.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/kv_cache_write.hpp"
#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/moe_routing.hpp"
#include "kernels/cpu/paged_attention.hpp"
#include "kernels/cpu/rms_norm.hpp"
#include "kernels/cpu/rope.hpp"
#include "kernels/cpu/shared_expert_add.hpp"
#include "kernels/cpu/swiglu.hpp"

namespace troupe {
namespace {

void add_bias(float* y, int rows, const std::vector<float>& bias) {
  if (bias.empty()) return;
  const int64_t n = int64_t(bias.size());
  for (int r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) y[r * n + i] += bias[size_t(i)];
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace

void add_to(std::vector<float>& residual, const std::vector<float>& block_out) {
  for (size_t j = 0; j < residual.size(); ++j) residual[j] += block_out[j];
}

void attention_block(const attention_weights& w, const model_config& c, const forward_batch& batch, const float* x,
                     kv_pool& kv, int layer, float* out) {
  const int tokens = int(batch.token_ids.size());
  const int heads = c.num_heads, kv_heads = c.num_kv_heads, hd = c.head_dim, row = kv.row();
  const float eps = float(c.rms_norm_eps);
  std::vector<float> q(static_cast<size_t>(tokens * heads * hd)), attn(q.size()), gate;
  std::vector<float> k(static_cast<size_t>(tokens * row)), v(k.size());
  const bool gated = c.arch == architecture::qwen3_5_moe;
  if (gated) {  // each head's q_proj rows: its query dims, then its gate's
    std::vector<float> both(static_cast<size_t>(w.q.rows) * size_t(tokens));
    cpu::matmul(x, tokens, w.q, both.data());
    add_bias(both.data(), tokens, w.q_bias);
    gate.resize(q.size());
    for (int64_t r = 0; r < int64_t(tokens) * heads; ++r) {
      std::copy_n(both.data() + r * 2 * hd, hd, q.data() + r * hd);
      std::copy_n(both.data() + r * 2 * hd + hd, hd, gate.data() + r * hd);
    }
  } else {
    cpu::matmul(x, tokens, w.q, q.data());
    add_bias(q.data(), tokens, w.q_bias);
  }
  cpu::matmul(x, tokens, w.k, k.data());
  cpu::matmul(x, tokens, w.v, v.data());
  add_bias(k.data(), tokens, w.k_bias);
  add_bias(v.data(), tokens, w.v_bias);
  cpu::rms_norm(q.data(), w.q_norm.data(), eps, tokens * heads, hd, q.data());
  cpu::rms_norm(k.data(), w.k_norm.data(), eps, tokens * kv_heads, hd, k.data());

  std::vector<int> positions(static_cast<size_t>(tokens));
  for (const auto& s : batch.sequences)
    for (int t = 0; t < s.tokens; ++t) positions[size_t(s.first_token + t)] = s.start + t;
  cpu::rope(q.data(), tokens, heads, hd, positions.data(), float(c.rope_theta), c.rotary_dim);
  cpu::rope(k.data(), tokens, kv_heads, hd, positions.data(), float(c.rope_theta), c.rotary_dim);

  for (const auto& s : batch.sequences) {
    const int64_t first = s.first_token;
    cpu::kv_cache_write(k.data() + first * row, v.data() + first * row, s.tokens, row, s.block_table.data(),
                        kv.block_size(), s.start, kv.keys(layer), kv.values(layer));
    cpu::paged_attention(q.data() + first * heads * hd, s.tokens, heads, kv_heads, hd,
                         {kv.keys(layer), kv.values(layer), s.block_table.data(), kv.block_size()}, s.start,
                         attn.data() + first * heads * hd);
  }
  for (size_t i = 0; i < gate.size(); ++i) attn[i] *= sigmoid(gate[i]);
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

status moe_block(const layer_weights& w, const model_config& c, const float* x, int tokens, expert_executor& experts,
                 int layer, float* out) {
  const int count = c.num_experts, k = c.num_experts_per_tok;
  std::vector<float> logits(static_cast<size_t>(tokens * count));
  cpu::matmul(x, tokens, w.router, logits.data());
  std::vector<int> chosen(static_cast<size_t>(tokens * k));
  std::vector<float> weights(chosen.size());
  for (int t = 0; t < tokens; ++t)
    cpu::route_top_k(logits.data() + t * count, count, k, c.norm_topk_prob, chosen.data() + t * k,
                     weights.data() + t * k);
  return experts.run(layer, x, tokens, k, chosen.data(), weights.data(), out);
}

void shared_expert_block(const layer_weights& w, const float* x, int tokens, float* out) {
  const int64_t hidden = w.shared_expert_gate.cols;
  std::vector<float> expert(static_cast<size_t>(tokens * hidden)), gate(static_cast<size_t>(tokens));
  mlp_block(w.shared_expert, x, tokens, expert.data());
  cpu::matmul(x, tokens, w.shared_expert_gate, gate.data());
  cpu::shared_expert_add(out, expert.data(), gate.data(), tokens, hidden);
}

}  // namespace troupe
