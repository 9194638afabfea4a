#pragma once
// A stage's step on the CPU: embed (first stage), layers [first, last) over a KV pool (and
// recurrent-state slots) of its own, then logits and sampling (last stage).
#include <memory>

#include "model/kv_pool.hpp"
#include "model/moe_model.hpp"
#include "model/step_runner.hpp"

namespace troupe {

class cpu_step_runner final : public step_runner {
 public:
  cpu_step_runner(std::shared_ptr<const moe_model> model, std::shared_ptr<expert_executor> experts, int first_layer,
                  int last_layer, int num_blocks, int block_size, int state_slots)
      : model_(std::move(model)),
        experts_(std::move(experts)),
        first_(first_layer),
        last_(last_layer),
        kv_(model_->config(), first_layer, last_layer - first_layer, num_blocks, block_size, state_slots) {}

  result<stage_output> run(const forward_batch& batch, std::vector<float> hidden,
                           const std::vector<sample_request>& samples) override;

 private:
  std::shared_ptr<const moe_model> model_;
  std::shared_ptr<expert_executor> experts_;
  int first_, last_;
  kv_pool kv_;
};

}  // namespace troupe
