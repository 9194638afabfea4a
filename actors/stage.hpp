#pragma once
#include <memory>
#include <string>
#include <unordered_map>

#include "actors/actors.hpp"
#include "model/kv_pool.hpp"
#include "model/qwen3_moe.hpp"
#include "model/sampler.hpp"

namespace troupe {

struct stage_options {
  std::string name;
  int first_layer = 0;
  int last_layer = 0;  // exclusive; the stage holding the last layer computes logits and samples
  int num_blocks = 0;
  int block_size = 16;
};

struct stage_state {
  static inline const char* name = "stage";
  stage_options options;
  std::shared_ptr<const qwen3_moe> model;
  std::unique_ptr<kv_pool> kv;
  std::shared_ptr<expert_executor> experts;
  std::unordered_map<request_id, token_history> histories;  // for the penalties
  health_monitor_actor health;
};

// Runs its layers of each step plan. Weights are shared and read-only, so a restarted stage
// re-attaches to them; its KV pool starts empty (the scheduler re-prefills).
stage_actor::behavior_type stage(stage_actor::stateful_pointer<stage_state> self, stage_options options,
                                 std::shared_ptr<const qwen3_moe> model,
                                 std::shared_ptr<expert_executor> experts, health_monitor_actor health);

}  // namespace troupe
