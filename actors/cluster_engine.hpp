#pragma once
// The head's side of a cluster: it joins every node agent with the cluster secret, has
// each load the model, spawns the health monitor, kv_manager and scheduler in this process,
// hands every node the others' transport addresses and starts their stages and expert
// groups, then waits until each reports ready. The gateway is opened on the result.
#include <vector>

#include "actors/local_engine.hpp"
#include "cluster/cluster_spec.hpp"

namespace troupe {

// agents[i] is spec.nodes[i]'s; `scheduler` as in one process (its stage count and step
// timeout come from the spec). An error names the node that failed and why.
result<engine> start_cluster_engine(caf::actor_system& system, const cluster_spec& spec,
                                    const std::vector<node_agent_actor>& agents, scheduler_options scheduler);

}  // namespace troupe
