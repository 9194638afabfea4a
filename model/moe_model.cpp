#include "model/moe_model.hpp"

#include "kernels/cpu/embedding.hpp"
#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/rms_norm.hpp"
#include "model/qwen3_5_moe.hpp"
#include "model/qwen3_moe.hpp"

namespace troupe {

std::vector<float> moe_model::embed(const forward_batch& batch) const {
  const int n = int(batch.token_ids.size());
  std::vector<float> hidden(static_cast<size_t>(n) * size_t(config_.hidden_size));
  cpu::embedding(weights_.embed, batch.token_ids.data(), n, hidden.data());
  return hidden;
}

std::vector<float> moe_model::logits(const forward_batch& batch, const std::vector<float>& hidden) const {
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

std::shared_ptr<const moe_model> make_model(model_config config, model_weights weights) {
  if (config.arch == architecture::qwen3_5_moe)
    return std::make_shared<const qwen3_5_moe>(std::move(config), std::move(weights));
  return std::make_shared<const qwen3_moe>(std::move(config), std::move(weights));
}

result<std::shared_ptr<const moe_model>> load_model(const std::filesystem::path& dir, bool dummy) {
  auto config = load_model_config(dir);
  if (!config) return config.err();
  if (dummy) return make_model(*config, make_dummy_weights(*config, 0));
  auto ckpt = checkpoint::open(dir);
  if (!ckpt) return ckpt.err();
  auto weights = load_weights(*config, std::make_shared<checkpoint>(std::move(*ckpt)));
  if (!weights) return weights.err();
  return make_model(std::move(*config), std::move(*weights));
}

}  // namespace troupe
