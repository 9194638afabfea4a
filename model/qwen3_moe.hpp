#pragma once
// The qwen3_moe architecture (Qwen3-30B-A3B, Qwen3-235B-A22B, Qwen3-Coder-30B-A3B): every
// layer full attention with q/k norms, then a sparse MoE block or a dense SwiGLU MLP.
#include "model/moe_model.hpp"

namespace troupe {

class qwen3_moe final : public moe_model {
 public:
  qwen3_moe(model_config config, model_weights weights) : moe_model(std::move(config), std::move(weights)) {}

  status run_layers(int first, int last, const forward_batch& batch, kv_pool& kv, expert_executor& experts,
                    std::vector<float>& hidden) const override;
};

}  // namespace troupe
