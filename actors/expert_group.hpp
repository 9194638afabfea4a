#pragma once
#include <functional>
#include <memory>
#include <string>

#include "actors/actors.hpp"
#include "actors/supervisor.hpp"
#include "model/expert_executor.hpp"
#include "transport/expert_parallel.hpp"

namespace troupe {

// The server of a GPU group's experts for stages on other GPUs (nccl_expert_server).
using expert_server_factory = std::function<result<std::unique_ptr<remote_expert_server>>()>;

struct expert_group_options {
  std::string name;
  int first_expert = 0;
  int last_expert = 0;  // exclusive
  // A GPU group that stages of other processes reach over NCCL; null for the rest.
  expert_server_factory make_server;
};

struct expert_group_state {
  static inline const char* name = "expert_group";
  std::string group;  // its name in health reports and logs
  std::unique_ptr<remote_expert_server> server;
};

// Serves experts [first, last) of every MoE layer to the stages from (re)start until the
// actor ends (crash included): attached where this process's stages reach them, and, with
// a server, to the GPU stages of other processes, a step at a time on the actor's own
// thread (a failed step is logged; the stage's own step fails with it and it joins anew).
// Weights live outside it, so a restart re-attaches to them.
expert_group_actor::behavior_type expert_group(expert_group_actor::stateful_pointer<expert_group_state> self,
                                               expert_group_options options, experts_attacher attach,
                                               health_monitor_actor health);

// A group as its supervisor (re)starts it: a detached actor of its own.
child_spec expert_group_child(expert_group_options options, experts_attacher attach, health_monitor_actor health);

}  // namespace troupe
