#pragma once
// The qwen3_5_moe architecture (Qwen3.5/3.6-MoE, e.g. Qwen3.5-35B-A3B): three of every four
// layers Gated DeltaNet linear attention, the rest full attention with an output gate and
// partial rotary; every layer a sparse MoE block plus a gated shared expert.
#include "model/moe_model.hpp"

namespace troupe {

class qwen3_5_moe final : public moe_model {
 public:
  qwen3_5_moe(model_config config, model_weights weights) : moe_model(std::move(config), std::move(weights)) {}

  // `kv` holds the full-attention layers' KV blocks and the linear layers' recurrent
  // states; each sequence of `batch` names its state slot.
  status run_layers(int first, int last, const forward_batch& batch, kv_pool& kv, expert_executor& experts,
                    std::vector<float>& hidden) const override;
};

}  // namespace troupe
