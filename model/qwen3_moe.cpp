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

std::vector<float> qwen3_moe::forward(std::span<const int> tokens, kv_cache& cache,
                                      bool all_logits) const {
  const auto& c = config_;
  const int n = int(tokens.size());
  const int64_t hidden = c.hidden_size;
  const float eps = float(c.rms_norm_eps);
  std::vector<float> residual(static_cast<size_t>(n * hidden)), normed(residual.size()), block_out(residual.size());
  cpu::embedding(weights_.embed, tokens.data(), n, residual.data());

  for (int i = 0; i < c.num_layers; ++i) {
    const layer_weights& layer = weights_.layers[size_t(i)];
    cpu::rms_norm(residual.data(), layer.input_norm.data(), eps, n, c.hidden_size, normed.data());
    attention_block(layer.attn, c, normed.data(), n, cache, i, block_out.data());
    for (size_t j = 0; j < residual.size(); ++j) residual[j] += block_out[j];

    cpu::rms_norm(residual.data(), layer.post_attention_norm.data(), eps, n, c.hidden_size,
                  normed.data());
    if (layer.moe) moe_block(layer, c, normed.data(), n, block_out.data());
    else mlp_block(layer.mlp, normed.data(), n, block_out.data());
    for (size_t j = 0; j < residual.size(); ++j) residual[j] += block_out[j];
  }
  cache.advance(n);

  const int rows = all_logits ? n : 1;
  const float* last = residual.data() + (n - rows) * hidden;
  cpu::rms_norm(last, weights_.final_norm.data(), eps, rows, c.hidden_size, normed.data());
  std::vector<float> logits(size_t(rows) * size_t(c.vocab_size));
  cpu::matmul(normed.data(), rows, weights_.lm_head, logits.data());
  return logits;
}

}  // namespace troupe
