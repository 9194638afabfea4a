#include "model/linear_attention.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/check.hpp"
#include "kernels/cpu/causal_conv1d.hpp"
#include "kernels/cpu/gated_delta_rule.hpp"
#include "kernels/cpu/gated_rms_norm.hpp"
#include "kernels/cpu/matmul.hpp"

namespace troupe {
namespace {

constexpr int delta_rule_chunk = 64;  // transformers' chunk size for its prefill form

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }  // torch's threshold

}  // namespace

void linear_attention_block(const linear_attention_weights& w, const model_config& c, const forward_batch& batch,
                            const float* x, kv_pool& kv, int layer, float* out) {
  const int tokens = int(batch.token_ids.size());
  const int conv_dim = c.linear_conv_dim(), heads = c.linear_num_value_heads;
  const int key_width = c.linear_num_key_heads * c.linear_key_head_dim;
  const int value_width = heads * c.linear_value_head_dim;
  std::vector<float> mixed(size_t(tokens) * size_t(conv_dim)), z(size_t(tokens) * size_t(value_width));
  std::vector<float> beta(size_t(tokens) * size_t(heads)), decay(beta.size());
  cpu::matmul(x, tokens, w.in_qkv, mixed.data());
  cpu::matmul(x, tokens, w.in_z, z.data());
  cpu::matmul(x, tokens, w.in_b, beta.data());
  cpu::matmul(x, tokens, w.in_a, decay.data());
  for (size_t i = 0; i < beta.size(); ++i) {
    const size_t h = i % size_t(heads);
    beta[i] = 1.0f / (1.0f + std::exp(-beta[i]));
    decay[i] = w.neg_decay_rate[h] * softplus(decay[i] + w.dt_bias[h]);  // log of the step's decay
  }

  std::vector<float> core(size_t(tokens) * size_t(value_width));
  std::vector<float> conv, q, k, v;
  for (const auto& s : batch.sequences) {
    TROUPE_CHECK(s.state_slot >= 0 && s.state_slot < kv.state_slots(), "a sequence without a recurrent-state slot");
    float* conv_state = kv.conv_state(layer, s.state_slot);
    float* delta_state = kv.delta_state(layer, s.state_slot);
    if (s.start == 0) {  // its first tokens: nothing before them
      std::fill_n(conv_state, kv.conv_state_floats(), 0.0f);
      std::fill_n(delta_state, kv.delta_state_floats(), 0.0f);
    }
    const size_t n = size_t(s.tokens), first = size_t(s.first_token);
    conv.resize(n * size_t(conv_dim));
    cpu::causal_conv1d_silu(mixed.data() + first * size_t(conv_dim), s.tokens, conv_dim, w.conv.data(),
                            c.linear_conv_kernel_dim, conv_state, conv.data());
    // Each conv row holds the token's queries, then its keys, then its values.
    q.resize(n * size_t(key_width));
    k.resize(q.size());
    v.resize(n * size_t(value_width));
    for (size_t t = 0; t < n; ++t) {
      const float* row = conv.data() + t * size_t(conv_dim);
      std::copy_n(row, key_width, q.data() + t * size_t(key_width));
      std::copy_n(row + key_width, key_width, k.data() + t * size_t(key_width));
      std::copy_n(row + 2 * key_width, value_width, v.data() + t * size_t(value_width));
    }
    const cpu::delta_rule_shape shape{s.tokens, c.linear_num_key_heads, heads, c.linear_key_head_dim,
                                      c.linear_value_head_dim};
    const float* g = decay.data() + first * size_t(heads);
    const float* b = beta.data() + first * size_t(heads);
    float* o = core.data() + first * size_t(value_width);
    if (s.tokens == 1)
      cpu::gated_delta_rule_recurrent(q.data(), k.data(), v.data(), g, b, shape, delta_state, o);
    else
      cpu::gated_delta_rule_chunked(q.data(), k.data(), v.data(), g, b, shape, delta_rule_chunk, delta_state, o);
  }
  cpu::gated_rms_norm(core.data(), z.data(), w.norm.data(), float(c.rms_norm_eps), tokens * heads,
                      c.linear_value_head_dim, core.data());
  cpu::matmul(core.data(), tokens, w.out, out);
}

}  // namespace troupe
