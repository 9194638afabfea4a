#pragma once
// single_sequence on the CUDA step: one sequence through a runner of the whole model on
// one GPU, with KV blocks and recurrent-state slot 0 of its own, decoded greedily; for
// `troupe generate --device cuda`, where no scheduler or kv_manager is involved.
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "base/result.hpp"
#include "model/cuda/gpu_experts.hpp"
#include "model/cuda/gpu_weights.hpp"
#include "model/step_runner.hpp"

namespace troupe {

class gpu_single_sequence {
 public:
  // DIR's weights on the current GPU (random ones with `dummy`), room for `capacity` tokens.
  static result<std::unique_ptr<gpu_single_sequence>> load(const std::filesystem::path& dir, bool dummy, int capacity);

  // Appends `tokens`; the greedy token after them.
  result<int> forward(std::span<const int> tokens);
  const model_config& config() const { return weights_->config; }

 private:
  std::shared_ptr<const gpu_weights> weights_;
  std::shared_ptr<gpu_experts> experts_;
  std::unique_ptr<step_runner> runner_;
  std::vector<int> block_table_;
  token_history history_;
  int length_ = 0;
};

}  // namespace troupe
