#pragma once
// The actor that owns a running cluster at its head (cluster_engine.hpp's running_cluster):
// a replica's start or stop (/admin/replicas) and a restarted node's rejoin are messages
// to it, so they never overlap, and its end stops the cluster's actors in this process.
// Each change blocks on the nodes for seconds: it runs detached, apart from the gateway.
#include "actors/actors.hpp"
#include "actors/cluster_engine.hpp"

namespace troupe {

struct cluster_head_state {
  static inline const char* name = "cluster_head";
  const cluster_spec* spec = nullptr;  // outlives the actor
  running_cluster cluster;
  bool stopped = false;
};

// `spec` must outlive the actor. Exits stop the cluster before the actor ends.
cluster_head_actor::behavior_type cluster_head(cluster_head_actor::stateful_pointer<cluster_head_state> self,
                                               const cluster_spec* spec, running_cluster cluster);

}  // namespace troupe
