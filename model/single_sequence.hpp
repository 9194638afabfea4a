#pragma once
// One sequence run through the whole model with KV blocks and a recurrent-state slot of its
// own: for the CLI, benchmarks and tests, where no scheduler or kv_manager is involved.
#include <span>
#include <vector>

#include "model/local_experts.hpp"
#include "model/moe_model.hpp"

namespace troupe {

class single_sequence {
 public:
  single_sequence(const moe_model& model, int capacity, int block_size = 16);

  // Appends `tokens`; returns logits [rows, vocab] of every new token when `all_logits`,
  // else of the last one.
  std::vector<float> forward(std::span<const int> tokens, bool all_logits = false);
  int length() const { return length_; }

 private:
  const moe_model& model_;
  kv_pool kv_;
  local_experts experts_;
  std::vector<int> block_table_;
  int length_ = 0;
};

}  // namespace troupe
