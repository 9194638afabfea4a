#include "model/qwen3_moe.hpp"

#include "kernels/cpu/embedding.hpp"
#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/rms_norm.hpp"
#include "model/layers.hpp"

namespace troupe {

result<qwen3_moe> qwen3_moe::load(const std::filesystem::path& dir, bool dummy) {
  auto config = load_model_config(dir);
  if (!config) return config.err();
  if (dummy) return qwen3_moe(*config, make_dummy_weights(*config, 0));
  auto ckpt = checkpoint::open(dir);
  if (!ckpt) return ckpt.err();
  auto weights = load_weights(*config, std::make_shared<checkpoint>(std::move(*ckpt)));
  if (!weights) return weights.err();
  return qwen3_moe(std::move(*config), std::move(*weights));
}

std::vector<float> qwen3_moe::embed(const forward_batch& batch) const {
  const int n = int(batch.token_ids.size());
  std::vector<float> hidden(static_cast<size_t>(n) * size_t(config_.hidden_size));
  cpu::embedding(weights_.embed, batch.token_ids.data(), n, hidden.data());
  return hidden;
}

status qwen3_moe::run_layers(int first, int last, const forward_batch& batch, kv_pool& kv,
                           expert_executor& experts, std::vector<float>& residual) const {
  const auto& c = config_;
  const int n = int(batch.token_ids.size());
  const float eps = float(c.rms_norm_eps);
  std::vector<float> normed(residual.size()), block_out(residual.size());
  for (int i = first; i < last; ++i) {
    const layer_weights& layer = weights_.layers[size_t(i)];
    cpu::rms_norm(residual.data(), layer.input_norm.data(), eps, n, c.hidden_size, normed.data());
    attention_block(layer.attn, c, batch, normed.data(), kv, i, block_out.data());
    for (size_t j = 0; j < residual.size(); ++j) residual[j] += block_out[j];

    cpu::rms_norm(residual.data(), layer.post_attention_norm.data(), eps, n, c.hidden_size, normed.data());
    if (layer.moe) {
      if (auto s = moe_block(layer, c, normed.data(), n, experts, i, block_out.data()); !s) return s;
    } else {
      mlp_block(layer.mlp, normed.data(), n, block_out.data());
    }
    for (size_t j = 0; j < residual.size(); ++j) residual[j] += block_out[j];
  }
  return ok();
}

std::vector<float> qwen3_moe::logits(const forward_batch& batch, const std::vector<float>& hidden) const {
  const int64_t h = config_.hidden_size;
  std::vector<float> rows;
  for (const auto& s : batch.sequences) {
    const int count = s.logits == logits_rows::all ? s.tokens : s.logits == logits_rows::last ? 1 : 0;
    const int64_t from = s.first_token + s.tokens - count;
    rows.insert(rows.end(), hidden.begin() + from * h, hidden.begin() + (from + count) * h);
  }
  const int n = int(rows.size() / size_t(h));
  cpu::rms_norm(rows.data(), weights_.final_norm.data(), float(config_.rms_norm_eps), n, int(h), rows.data());
  std::vector<float> logits(static_cast<size_t>(n) * size_t(config_.vocab_size));
  cpu::matmul(rows.data(), n, weights_.lm_head, logits.data());
  return logits;
}

}  // namespace troupe
