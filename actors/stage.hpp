#pragma once
#include <memory>
#include <string>
#include <unordered_map>

#include "actors/actors.hpp"
#include "model/step_runner.hpp"

namespace troupe {

struct stage_options {
  std::string name;
  int first_layer = 0;
  int last_layer = 0;  // exclusive; the stage holding the last layer computes logits and samples
};

struct stage_state {
  static inline const char* name = "stage";
  stage_options options;
  std::unique_ptr<step_runner> runner;
  std::unordered_map<request_id, token_history> histories;  // for the penalties
  health_monitor_actor health;
};

// Runs its layers of each step plan. Its KV pool starts empty at every (re)start: the
// scheduler re-prefills the sequences it had.
stage_actor::behavior_type stage(stage_actor::stateful_pointer<stage_state> self, stage_options options,
                                 step_runner_factory make_runner, health_monitor_actor health);

}  // namespace troupe
