#include "actors/cluster_head.hpp"

#include <utility>

namespace troupe {
namespace {

using self_ptr = cluster_head_actor::stateful_pointer<cluster_head_state>;

caf::error failure(const std::string& message) { return caf::make_error(caf::sec::runtime_error, message); }

void stop_cluster(self_ptr self) {
  auto& st = self->state;
  if (std::exchange(st.stopped, true)) return;
  st.cluster.stop(self->system());
}

}  // namespace

cluster_head_actor::behavior_type cluster_head(self_ptr self, const cluster_spec* spec, running_cluster cluster) {
  self->state.spec = spec;
  self->state.cluster = std::move(cluster);
  self->set_exit_handler([=](caf::exit_msg& msg) {
    stop_cluster(self);
    self->quit(msg.reason);
  });
  return {
      [=](add_replica_atom, int r) -> caf::result<scheduler_actor> {
        auto& st = self->state;
        if (r < 0 || size_t(r) >= st.spec->replicas.size()) return failure("no replica " + std::to_string(r));
        auto s = start_replica(self->system(), *st.spec, st.cluster, size_t(r));
        if (!s) return failure(s.err().message);
        return *s;
      },
      [=](remove_replica_atom, int r) -> caf::result<int> {
        auto& st = self->state;
        if (r < 0 || size_t(r) >= st.spec->replicas.size()) return failure("no replica " + std::to_string(r));
        auto n = stop_replica(self->system(), *st.spec, st.cluster, size_t(r));
        if (!n) return failure(n.err().message);
        return *n;
      },
      [=](rejoin_atom, int node, const node_agent_actor& agent) -> caf::result<bool> {
        auto& st = self->state;
        if (node < 0 || size_t(node) >= st.spec->nodes.size()) return failure("no node " + std::to_string(node));
        if (auto back = rejoin_node(self->system(), *st.spec, st.cluster, size_t(node), agent); !back)
          return failure(back.err().message);
        return true;
      },
  };
}

}  // namespace troupe
