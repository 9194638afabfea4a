#pragma once
// The head's control of a cluster's replicas at runtime, for the gateway's
// /admin/replicas. Starting or stopping a replica blocks on its nodes for seconds, so this
// actor runs detached, apart from the gateway it answers; the functions it is given do the
// work (cluster_engine's start_replica and stop_replica, under the lock that a node's
// rejoin takes too).
#include <functional>

#include "actors/actors.hpp"
#include "base/result.hpp"

namespace troupe {

struct replica_control_functions {
  std::function<result<scheduler_actor>(size_t replica)> start;
  std::function<result<int>(size_t replica)> stop;
};

struct replica_control_state {
  static inline const char* name = "replica_control";
  replica_control_functions functions;
};

replica_control_actor::behavior_type replica_control(replica_control_actor::stateful_pointer<replica_control_state> self,
                                                     replica_control_functions functions);

// The message of an error a replica_control (or any troupe actor) answered with.
std::string error_message(const caf::error& e);

}  // namespace troupe
