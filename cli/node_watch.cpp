#include "cli/node_watch.hpp"

#include <map>

namespace troupe::cli {
namespace {

using watch_atom = caf::atom_constant<caf::atom("watch")>;

struct watch_state {
  std::map<std::string, caf::actor_addr> agents;   // by node
  std::map<std::string, std::string> stage_nodes;  // "REPLICA/stage_K" -> its node
};

std::map<std::string, std::string> stage_nodes(const cluster_spec& spec) {
  std::map<std::string, std::string> out;
  for (const replica_spec& r : spec.replicas)
    for (size_t k = 0; k < r.stages.size(); ++k) out[r.name + "/" + stage_name(int(k))] = r.stages[k].node;
  return out;
}

}  // namespace

caf::actor spawn_node_watch(caf::actor_system& system, const cluster_spec& spec,
                            std::function<void(const std::string& node)> lost) {
  return system.spawn([lost, stages = stage_nodes(spec)](caf::stateful_actor<watch_state>* self) -> caf::behavior {
    self->state.stage_nodes = stages;
    // A node is reported once: its agent is forgotten until its successor is watched.
    auto report = [=](const std::string& node) {
      self->state.agents.erase(node);
      lost(node);
    };
    self->set_down_handler([=](caf::down_msg& msg) {
      for (const auto& [node, agent] : self->state.agents)
        if (agent == msg.source) return report(node);
    });
    return {
        [=](watch_atom, const std::string& node, const caf::actor& agent) {
          self->state.agents[node] = agent.address();
          self->monitor(agent);
        },
        // From the health monitor: only the nodes watched here have a process to restart
        // (the head's own stages are replaced by their supervisor).
        [=](stuck_atom, const std::string& component) {
          auto at = self->state.stage_nodes.find(component);
          if (at != self->state.stage_nodes.end() && self->state.agents.count(at->second)) report(at->second);
        },
    };
  });
}

void watch_node(const caf::actor& watch, const std::string& node, const node_agent_actor& agent) {
  caf::anon_send(watch, watch_atom::value, node, caf::actor_cast<caf::actor>(agent));
}

}  // namespace troupe::cli
