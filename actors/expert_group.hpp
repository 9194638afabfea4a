#pragma once
#include <memory>
#include <string>

#include "actors/actors.hpp"
#include "model/qwen3_moe.hpp"
#include "transport/in_process_experts.hpp"

namespace troupe {

struct expert_group_options {
  std::string name;
  int first_expert = 0;
  int last_expert = 0;  // exclusive
};

struct expert_group_state {
  static inline const char* name = "expert_group";
};

// Serves experts [first, last) of every MoE layer to the stages of this process through
// the in-process transport, from attach until the actor ends (crash included).
expert_group_actor::behavior_type expert_group(expert_group_actor::stateful_pointer<expert_group_state> self,
                                               expert_group_options options, std::shared_ptr<const qwen3_moe> model,
                                               std::shared_ptr<in_process_experts> transport,
                                               health_monitor_actor health);

}  // namespace troupe
