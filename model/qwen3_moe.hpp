#pragma once
// The qwen3_moe architecture (Qwen3-30B-A3B, Qwen3-235B-A22B, Qwen3-Coder-30B-A3B) on the
// CPU: fp32 math over bf16/f16/f32 weights.
#include <filesystem>
#include <span>
#include <vector>

#include "base/result.hpp"
#include "model/kv_cache.hpp"
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

  // Runs `tokens` at the positions after what `cache` holds and appends them to it.
  // Returns logits [rows, vocab]: every token's when `all_logits`, else the last one's.
  std::vector<float> forward(std::span<const int> tokens, kv_cache& cache,
                             bool all_logits = false) const;

  const model_config& config() const { return config_; }

 private:
  model_config config_;
  model_weights weights_;
};

}  // namespace troupe
