#pragma once
// The head's side of a cluster: it joins every node agent with the cluster secret, has
// each load the model, spawns the health monitor and, per replica, a kv_manager and a
// scheduler in this process, hands every node the others' transport addresses and starts
// their stages and expert groups, then waits until each reports ready. The gateway is
// opened on the result. A replica with `start = no` gets none of that until it is added
// at runtime (start_replica); stop_replica takes a running one down again.
#include <vector>

#include "actors/gateway.hpp"
#include "actors/local_engine.hpp"
#include "cluster/cluster_spec.hpp"

namespace troupe {

struct running_cluster {
  model_config config;
  health_monitor_actor health;
  std::vector<replica_endpoint> replicas;  // the file's, in order; a null scheduler while one is not running
  std::vector<caf::actor> actors;          // this process's: health monitor, node agent
  // By replica: its kv manager and scheduler here, none while it is not running.
  std::vector<std::vector<caf::actor>> replica_actors;
  scheduler_options scheduling;  // of every replica's scheduler
  int num_blocks = 0;            // per stage (the nodes' least)
  int max_model_len = 0;
  // What a node started again needs to take its part back.
  std::vector<node_agent_actor> agents;         // spec.nodes' order
  std::vector<std::vector<uint8_t>> addresses;  // their transport addresses
  std::vector<scheduler_actor> schedulers;      // the replicas', null while one is not running

  // Stops this process's actors (the nodes stop when their head's schedulers are gone).
  void stop(caf::actor_system& system);
};

// `model` is the file's config.json; agents[i] is spec.nodes[i]'s, the gateway node's in
// this process. `scheduler` as in
// one process (stage count, prefix and step timeout come from the spec). An error names the
// node that failed and why.
result<running_cluster> start_cluster_engine(caf::actor_system& system, const cluster_spec& spec,
                                             const model_config& model, const std::vector<node_agent_actor>& agents,
                                             scheduler_options scheduler);

// Node `node`'s process was started again (its predecessor died) and `agent` is its new
// agent: joins it, has it load the model and start its stages and expert groups, which
// report to the running schedulers and health monitor as restarts do, and points every
// other node's transport at its new address. Whoever holds `cluster` must not use it
// meanwhile.
status rejoin_node(caf::actor_system& system, const cluster_spec& spec, running_cluster& cluster, size_t node,
                   node_agent_actor agent);

// Replica `r`, not running, starts: its scheduler here, its stages and expert groups on
// their nodes; the answer once every part is ready (within the startup timeout), or an
// error with nothing of it left running. The same rule as rejoin_node holds for `cluster`.
result<scheduler_actor> start_replica(caf::actor_system& system, const cluster_spec& spec, running_cluster& cluster,
                                      size_t r);

// Replica `r`, running and drained, stops: its nodes stop its stages and expert groups
// (and answer once they have), the health monitor forgets them, and its scheduler and kv
// manager here end. The parts stopped, or the first node's error (the rest still stop).
result<int> stop_replica(caf::actor_system& system, const cluster_spec& spec, running_cluster& cluster, size_t r);

}  // namespace troupe
