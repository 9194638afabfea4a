#include "model/qwen3_5_moe.hpp"

#include "kernels/cpu/rms_norm.hpp"
#include "model/layers.hpp"
#include "model/linear_attention.hpp"

namespace troupe {

status qwen3_5_moe::run_layers(int first, int last, const forward_batch& batch, kv_pool& kv, expert_executor& experts,
                               std::vector<float>& residual) const {
  const auto& c = config();
  const int n = int(batch.token_ids.size());
  const float eps = float(c.rms_norm_eps);
  std::vector<float> normed(residual.size()), mixed(residual.size()), moe_out(residual.size());
  for (int i = first; i < last; ++i) {
    const layer_weights& layer = weights().layers[size_t(i)];
    // Norm weights were loaded as 1 + weight, the form these norms scale by.
    cpu::rms_norm(residual.data(), layer.input_norm.data(), eps, n, c.hidden_size, normed.data());
    if (c.is_linear_layer(i))
      linear_attention_block(layer.linear, c, batch, normed.data(), kv, i, mixed.data());
    else
      attention_block(layer.attn, c, batch, normed.data(), kv, i, mixed.data());
    add_to(residual, mixed);

    cpu::rms_norm(residual.data(), layer.post_attention_norm.data(), eps, n, c.hidden_size, normed.data());
    if (auto s = moe_block(layer, c, normed.data(), n, experts, i, moe_out.data()); !s) return s;
    shared_expert_block(layer, normed.data(), n, moe_out.data());
    add_to(residual, moe_out);
  }
  return ok();
}

}  // namespace troupe
