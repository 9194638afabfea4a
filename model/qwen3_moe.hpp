#pragma once
// The qwen3_moe architecture (Qwen3-30B-A3B, Qwen3-235B-A22B, Qwen3-Coder-30B-A3B) on the
// CPU: fp32 math over bf16/f16/f32 weights. Split the way pipeline stages use it: the
// first stage embeds, every stage runs its layer range, the last computes logits.
#include <filesystem>
#include <vector>

#include "base/result.hpp"
#include "model/expert_executor.hpp"
#include "model/forward_batch.hpp"
#include "model/kv_pool.hpp"
#include "model/model_config.hpp"
#include "model/qwen3_moe_weights.hpp"

namespace troupe {

class qwen3_moe {
 public:
  qwen3_moe(model_config config, model_weights weights)
      : config_(std::move(config)), weights_(std::move(weights)) {}

  // Loads config.json and the safetensors of DIR; `dummy` builds random weights from the
  // config alone.
  static result<qwen3_moe> load(const std::filesystem::path& dir, bool dummy = false);

  // The batch's token embeddings: the residual stream [tokens, hidden].
  std::vector<float> embed(const forward_batch& batch) const;

  // Layers [first, last) on the residual stream, in place. `kv` must hold those layers.
  status run_layers(int first, int last, const forward_batch& batch, kv_pool& kv,
                  expert_executor& experts, std::vector<float>& hidden) const;

  // Final norm and lm_head: per sequence, rows of logits as its `logits` asks (every new
  // token, the last, or none), in batch order.
  std::vector<float> logits(const forward_batch& batch, const std::vector<float>& hidden) const;

  const model_config& config() const { return config_; }
  const model_weights& weights() const { return weights_; }

 private:
  model_config config_;
  model_weights weights_;
};

}  // namespace troupe
