#include "cli/node_watch.hpp"

#include <map>

namespace troupe::cli {
namespace {

using watch_atom = caf::atom_constant<caf::atom("watch")>;

struct watch_state {
  std::map<std::string, caf::actor_addr> agents;  // by node
};

}  // namespace

caf::actor spawn_node_watch(caf::actor_system& system, std::function<void(const std::string& node)> lost) {
  return system.spawn([lost](caf::stateful_actor<watch_state>* self) -> caf::behavior {
    self->set_down_handler([=](caf::down_msg& msg) {
      for (const auto& [node, agent] : self->state.agents)
        if (agent == msg.source) return lost(node);
    });
    return {
        [=](watch_atom, const std::string& node, const caf::actor& agent) {
          self->state.agents[node] = agent.address();
          self->monitor(agent);
        },
    };
  });
}

void watch_node(const caf::actor& watch, const std::string& node, const node_agent_actor& agent) {
  caf::anon_send(watch, watch_atom::value, node, caf::actor_cast<caf::actor>(agent));
}

}  // namespace troupe::cli
