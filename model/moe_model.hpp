#pragma once
// A MoE architecture on the CPU: fp32 math over bf16/f16/f32 weights. Split the way
// pipeline stages use it: the first stage embeds, every stage runs its layer range, the
// last computes logits. The architectures (qwen3_moe.cpp, qwen3_5_moe.cpp) differ only in
// their layers.
#include <filesystem>
#include <memory>
#include <vector>

#include "base/result.hpp"
#include "model/expert_executor.hpp"
#include "model/forward_batch.hpp"
#include "model/kv_pool.hpp"
#include "model/model_config.hpp"
#include "model/qwen3_moe_weights.hpp"

namespace troupe {

class moe_model {
 public:
  virtual ~moe_model() = default;

  // The batch's token embeddings: the residual stream [tokens, hidden].
  std::vector<float> embed(const forward_batch& batch) const;

  // Layers [first, last) on the residual stream, in place. `kv` must hold those layers.
  virtual status run_layers(int first, int last, const forward_batch& batch, kv_pool& kv, expert_executor& experts,
                            std::vector<float>& hidden) const = 0;

  // Final norm and lm_head: per sequence, rows of logits as its `logits` asks (every new
  // token, the last, or none), in batch order.
  std::vector<float> logits(const forward_batch& batch, const std::vector<float>& hidden) const;

  const model_config& config() const { return config_; }
  const model_weights& weights() const { return weights_; }

 protected:
  moe_model(model_config config, model_weights weights) : config_(std::move(config)), weights_(std::move(weights)) {}

 private:
  model_config config_;
  model_weights weights_;
};

// The architecture the config names, over weights bound for it.
std::shared_ptr<const moe_model> make_model(model_config config, model_weights weights);

// Loads config.json and the safetensors of DIR; `dummy` builds random weights from the
// config alone.
result<std::shared_ptr<const moe_model>> load_model(const std::filesystem::path& dir, bool dummy = false);

}  // namespace troupe
