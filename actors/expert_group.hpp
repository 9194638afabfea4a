#pragma once
#include <string>

#include "actors/actors.hpp"
#include "model/expert_executor.hpp"

namespace troupe {

struct expert_group_options {
  std::string name;
  int first_expert = 0;
  int last_expert = 0;  // exclusive
};

struct expert_group_state {
  static inline const char* name = "expert_group";
};

// Serves experts [first, last) of every MoE layer to the stages from (re)start until the
// actor ends (crash included). Weights live outside it, so a restart re-attaches to them.
expert_group_actor::behavior_type expert_group(expert_group_actor::stateful_pointer<expert_group_state> self,
                                               expert_group_options options, experts_attacher attach,
                                               health_monitor_actor health);

}  // namespace troupe
