#pragma once
// Experts [first, last) of every MoE layer, computed here on the CPU. An expert group
// holding only some experts adds only their share; the shares of all groups sum to the
// layer's output.
#include "model/expert_executor.hpp"
#include "model/qwen3_moe_weights.hpp"

namespace troupe {

class local_experts final : public expert_executor {
 public:
  local_experts(const model_weights& weights, int first_expert, int last_expert)
      : weights_(weights), first_(first_expert), last_(last_expert) {}

  status run(int layer, const float* x, int tokens, int k, const int* chosen, const float* weights,
             float* out) override;

 private:
  const model_weights& weights_;
  int first_, last_;
};

}  // namespace troupe
