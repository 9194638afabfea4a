#pragma once
// The head's watch on the node agents of the processes it started: an actor that monitors
// each and calls `lost` with the node's name when the one it watches goes down (its process
// died, or stopped answering heartbeats for the connection timeout). A restarted node's new
// agent is handed to it with watch_node; a down message of an agent it no longer watches
// (one already replaced or reported) is ignored. Subscribed to the health monitor, it also calls `lost`
// for the node of a stage declared stuck (alive, but in one step past the progress
// timeout): a process whose thread hangs is restarted whole.
#include <functional>
#include <string>

#include "actors/actors.hpp"
#include "cluster/cluster_spec.hpp"

namespace troupe::cli {

caf::actor spawn_node_watch(caf::actor_system& system, const cluster_spec& spec,
                            std::function<void(const std::string& node)> lost);

// Watches `agent` as node `node`'s from now on.
void watch_node(const caf::actor& watch, const std::string& node, const node_agent_actor& agent);

}  // namespace troupe::cli
