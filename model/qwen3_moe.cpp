#include "model/qwen3_moe.hpp"

#include "kernels/cpu/rms_norm.hpp"
#include "model/layers.hpp"

namespace troupe {

status qwen3_moe::run_layers(int first, int last, const forward_batch& batch, kv_pool& kv, expert_executor& experts,
                             std::vector<float>& residual) const {
  const auto& c = config();
  const int n = int(batch.token_ids.size());
  const float eps = float(c.rms_norm_eps);
  std::vector<float> normed(residual.size()), block_out(residual.size());
  for (int i = first; i < last; ++i) {
    const layer_weights& layer = weights().layers[size_t(i)];
    cpu::rms_norm(residual.data(), layer.input_norm.data(), eps, n, c.hidden_size, normed.data());
    attention_block(layer.attn, c, batch, normed.data(), kv, i, block_out.data());
    add_to(residual, block_out);

    cpu::rms_norm(residual.data(), layer.post_attention_norm.data(), eps, n, c.hidden_size, normed.data());
    if (layer.moe) {
      if (auto s = moe_block(layer, c, normed.data(), n, experts, i, block_out.data()); !s) return s;
    } else {
      mlp_block(layer.mlp, normed.data(), n, block_out.data());
    }
    add_to(residual, block_out);
  }
  return ok();
}

}  // namespace troupe
