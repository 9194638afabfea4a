#include "actors/node_agent.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "actors/expert_group.hpp"
#include "actors/stage.hpp"
#include "cluster/join_proof.hpp"
#include "text/grammar/grammar_cache.hpp"
#include "transport/remote_experts.hpp"

namespace troupe {
namespace {

using self_ptr = node_agent_actor::stateful_pointer<node_agent_state>;

int node_index(const cluster_spec& spec, const std::string& name) {
  for (size_t i = 0; i < spec.nodes.size(); ++i)
    if (spec.nodes[i].name == name) return int(i);
  return -1;
}

caf::error refused(const node_agent_state& st, const std::string& why) {
  return caf::make_error(caf::sec::runtime_error,
                         "node " + st.options.spec.nodes[size_t(st.options.node)].name + ": " + why);
}

bool joined(self_ptr self) {
  auto sender = self->current_sender();
  return sender != nullptr && self->state.joined.count(sender->node()) > 0;
}

void refuse_stranger(self_ptr self, const char* what) {
  std::fprintf(stderr, "troupe node %s: ignored %s from a peer that has not joined\n",
               self->state.options.spec.nodes[size_t(self->state.options.node)].name.c_str(), what);
}

// A drill or an exit from this process or from a head that joined; anyone else on the
// control port (a peer without the secret) is refused them.
bool trusted(self_ptr self, const caf::node_id& from) {
  return from == self->node() || self->state.joined.count(from) > 0;
}

// The replica's expert groups as a stage on this node reaches them: in this process, or
// through the peer of the node that holds them.
std::vector<remote_experts::group> expert_route(const node_agent_state& st, const replica_spec& replica,
                                                int num_experts) {
  std::vector<remote_experts::group> route;
  for (const placement& g : replica.experts) {
    const int at = node_index(st.options.spec, g.node);
    remote_experts::group r{g.first, g.last.value_or(num_experts - 1) + 1, std::nullopt};
    if (at != st.options.node) r.peer = st.peers[size_t(at)];
    route.push_back(r);
  }
  return route;
}

// The node's stages and expert groups of replica `r`, as a supervisor starts them.
std::vector<child_spec> node_children(self_ptr self, size_t r, const health_monitor_actor& health) {
  auto& st = self->state;
  const node_agent_options& o = st.options;
  const replica_spec& replica = o.spec.replicas[r];
  const model_config& c = st.backend->backend.config;
  const std::string& me = o.spec.nodes[size_t(o.node)].name;
  const std::string prefix = replica.name + "/";
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(o.spec.cluster.step_timeout);
  std::vector<child_spec> children;
  for (size_t g = 0; g < replica.experts.size(); ++g) {
    const placement& p = replica.experts[g];
    if (p.node != me) continue;
    expert_group_options opts{prefix + expert_group_name(int(g)), p.first, p.last.value_or(c.num_experts - 1) + 1, {}};
    // A GPU group that stages of other nodes reach over NCCL serves them too.
    if (st.backend->make_expert_server && !stages_reaching_group(replica, g, c.num_experts).empty())
      opts.make_server = [make = st.backend->make_expert_server, first = opts.first_expert, last = opts.last_expert] {
        return make(first, last);
      };
    children.push_back(expert_group_child(opts, st.backend->backend.attach_experts, health));
  }
  // On the CPU a stage reaches the replica's groups wherever they run; a GPU's runners use
  // the GPU's own experts.
  const bool on_cpu = st.backend->make_runner_over != nullptr;
  auto experts = on_cpu && c.num_experts > 0 ? std::make_shared<remote_experts>(
                                                   o.link, st.backend->groups, expert_route(st, replica, c.num_experts),
                                                   uint16_t(o.node), c.hidden_size, timeout)
                                             : nullptr;
  const auto grammars = make_engine_grammar_cache();
  for (size_t k = 0; k < replica.stages.size(); ++k) {
    const placement& p = replica.stages[k];
    if (p.node != me) continue;
    const int last = p.last.value_or(c.num_layers - 1) + 1;
    const bool last_stage = k + 1 == replica.stages.size();
    const int next_peer = last_stage ? -1 : st.peers[size_t(node_index(o.spec, replica.stages[k + 1].node))];
    stage_options opts{prefix + stage_name(int(k)),          int(k),       p.first,  last, last_stage, c.hidden_size,
                       {o.link, next_peer, timeout, int(r)}, o.vocabulary, grammars, {},   {}};
    step_runner_factory make = st.backend->backend.make_runner;
    if (on_cpu)
      make = [over = st.backend->make_runner_over, experts](int first, int last_layer) {
        return over(first, last_layer, experts);
      };
    if (st.backend->make_gpu_runner_over)
      if (stage_expert_ranks ranks = expert_ranks_of_stage(replica, k, c.num_experts); !ranks.peers.empty()) {
        std::vector<int> groups;
        std::vector<std::string> names;
        for (const expert_rank& peer : ranks.peers) {
          groups.push_back(peer.group);
          names.push_back(prefix + expert_group_name(peer.group) + " on node " + peer.node);
        }
        opts.expert_peers = std::make_shared<expert_peer_handles>(std::move(groups), std::move(names));
        make = [over = st.backend->make_gpu_runner_over, stage = int(k), ranks, peers = opts.expert_peers](
                   int first, int last_layer) { return over(first, last_layer, stage, ranks, peers); };
      }
    children.push_back(stage_child(opts, make, health));
  }
  return children;
}

// The names of replica `r`'s stages on this node.
std::vector<std::string> stage_names(const node_agent_state& st, size_t r) {
  const replica_spec& replica = st.options.spec.replicas[r];
  std::vector<std::string> names;
  for (size_t k = 0; k < replica.stages.size(); ++k)
    if (replica.stages[k].node == st.options.spec.nodes[size_t(st.options.node)].name)
      names.push_back(replica.name + "/" + stage_name(int(k)));
  return names;
}

// Starts the node's part of replica `r` under a supervisor of its own, reporting to the
// head's scheduler of it: how many stages and expert groups that is.
int start_replica_here(self_ptr self, size_t r, const scheduler_actor& scheduler, const health_monitor_actor& health) {
  auto& st = self->state;
  st.schedulers[r] = scheduler;
  self->monitor(scheduler);
  auto children = node_children(self, r, health);
  if (children.empty()) return 0;
  const int count = int(children.size());
  auto s =
      self->spawn(supervisor, std::move(children), st.options.restarts, health, caf::actor_cast<caf::actor>(scheduler));
  self->link_to(s);
  st.supervisors[r] = s;
  st.parts[r] = count;
  for (const std::string& name : stage_names(st, r)) st.stages.emplace_back(s, name);
  return count;
}

bool has_stage(const node_agent_state& st) {
  const std::string& me = st.options.spec.nodes[size_t(st.options.node)].name;
  for (const replica_spec& r : st.options.spec.replicas)
    for (const placement& p : r.stages)
      if (p.node == me) return true;
  return false;
}

}  // namespace

backend_options backend_options_of(const cluster_spec& spec) {
  backend_options b;
  b.model_dir = spec.model.path;
  b.dummy_weights = spec.model.load_format == weight_format::dummy;
  b.block_size = spec.engine.block_size;
  b.kv_cache_bytes = size_t(spec.engine.kv_cache_mb) << 20;
  b.max_num_seqs = spec.engine.max_num_seqs;
  b.max_num_batched_tokens = spec.engine.max_num_batched_tokens;
  b.max_model_len = spec.engine.max_model_len;
  return b;
}

node_agent_actor::behavior_type node_agent(self_ptr self, node_agent_options options) {
  self->state.options = std::move(options);
  // An exit's `source` is what the sender wrote: the envelope's sender is checked instead.
  // Without one it is a linked supervisor's end (CAF sends those anonymously).
  self->set_exit_handler([=](caf::exit_msg& msg) {
    const auto& sender = self->current_sender();
    const auto& supervisors = self->state.supervisors;
    const bool allowed = sender ? trusted(self, sender->node())
                                : std::find(supervisors.begin(), supervisors.end(), msg.source) != supervisors.end();
    if (!allowed) return refuse_stranger(self, "an exit");
    if (msg.reason) self->quit(msg.reason);
  });
  self->set_down_handler([=](caf::down_msg& msg) {
    auto& st = self->state;
    if (auto it = st.stopping.find(msg.source); it != st.stopping.end()) {  // a removed replica's part ended
      it->second.first.deliver(it->second.second);
      st.stopping.erase(it);
      return;
    }
    if (std::none_of(st.schedulers.begin(), st.schedulers.end(),
                     [&](const scheduler_actor& s) { return s && s.address() == msg.source; }))
      return;
    std::fprintf(stderr, "troupe node %s: the head is gone (%s); stopping\n",
                 st.options.spec.nodes[size_t(st.options.node)].name.c_str(), to_string(msg.reason).c_str());
    for (const auto& s : st.supervisors)
      if (s) self->send_exit(s, caf::exit_reason::user_shutdown);
    self->quit();
  });
  return {
      [=](challenge_atom) -> std::vector<uint8_t> {
        auto nonce = make_join_nonce();
        if (auto sender = self->current_sender()) self->state.nonces[sender->node()] = nonce;
        return nonce;
      },
      [=](join_atom, const std::vector<uint8_t>& proof) -> caf::result<node_description> {
        auto& st = self->state;
        auto sender = self->current_sender();
        auto nonce = sender == nullptr ? st.nonces.end() : st.nonces.find(sender->node());
        if (nonce == st.nonces.end()) return refused(st, "ask for a challenge before joining");
        const bool proven =
            join_proof_matches(st.options.spec.cluster.secret, st.options.spec.cluster.name, nonce->second, proof);
        st.nonces.erase(nonce);  // one proof per nonce
        if (!proven) {
          std::fprintf(stderr, "troupe node %s: refused a head that does not know the cluster secret\n",
                       st.options.spec.nodes[size_t(st.options.node)].name.c_str());
          return refused(st, "wrong cluster secret (the head's cluster.conf and this node's differ in `secret`)");
        }
        st.joined.insert(sender->node());
        return node_description{st.options.spec.nodes[size_t(st.options.node)].name, st.options.link->address()};
      },
      [=](load_atom) -> caf::result<int> {
        auto& st = self->state;
        if (!joined(self)) return refused(st, "join the cluster first");
        if (!st.backend) {
          auto b = make_node_backend(st.options.spec, st.options.node, st.options.backend);
          if (!b) return refused(st, b.err().message);
          if (auto valid = validate_against_model(st.options.spec, b->backend.config); !valid)
            return refused(st, valid.err().message);
          std::fprintf(stderr, "troupe node %s: computing on %s\n",
                       st.options.spec.nodes[size_t(st.options.node)].name.c_str(), b->device.c_str());
          st.backend = std::move(*b);
        }
        return has_stage(st) ? st.backend->backend.num_blocks : 0;
      },
      [=](start_atom, const std::vector<std::vector<uint8_t>>& addresses,
          const std::vector<scheduler_actor>& schedulers, health_monitor_actor health) -> caf::result<int> {
        auto& st = self->state;
        const cluster_spec& spec = st.options.spec;
        if (!joined(self)) return refused(st, "join the cluster first");
        if (!st.backend) return refused(st, "load the model first");
        if (st.started) return refused(st, "already started");
        if (addresses.size() != spec.nodes.size() || schedulers.size() != spec.replicas.size())
          return refused(st, "the head's cluster has " + std::to_string(addresses.size()) + " nodes and " +
                                 std::to_string(schedulers.size()) + " replicas; this node's file " +
                                 std::to_string(spec.nodes.size()) + " and " + std::to_string(spec.replicas.size()));
        st.peers.clear();
        for (size_t i = 0; i < addresses.size(); ++i) {
          auto peer = addresses[i].empty() ? st.options.link->absent_peer() : st.options.link->connect(addresses[i]);
          if (!peer) return refused(st, "reaching node " + spec.nodes[i].name + ": " + peer.err().message);
          st.peers.push_back(*peer);
        }
        const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(spec.cluster.step_timeout);
        if (st.backend->groups)  // a GPU node's experts serve its own stages only
          st.server = std::make_unique<expert_server>(
              st.options.link, st.backend->groups,
              [peers = st.peers](int node) -> std::optional<int> {
                if (node < 0 || size_t(node) >= peers.size()) return std::nullopt;
                return peers[size_t(node)];
              },
              timeout);
        st.started = true;
        st.schedulers.assign(spec.replicas.size(), scheduler_actor{});
        st.supervisors.assign(spec.replicas.size(), nullptr);
        st.parts.assign(spec.replicas.size(), 0);
        int started = 0;
        for (size_t r = 0; r < spec.replicas.size(); ++r)
          if (schedulers[r]) started += start_replica_here(self, r, schedulers[r], health);
        return started;
      },
      [=](repoint_atom, int node, const std::vector<uint8_t>& address) -> caf::result<int> {
        auto& st = self->state;
        if (!joined(self)) return refused(st, "join the cluster first");
        if (node < 0 || size_t(node) >= st.peers.size())
          return refused(st, "no node " + std::to_string(node) + " to repoint");
        if (auto moved = st.options.link->repoint(st.peers[size_t(node)], address); !moved)
          return refused(
              st, "reaching node " + st.options.spec.nodes[size_t(node)].name + " again: " + moved.err().message);
        return st.peers[size_t(node)];
      },
      [=](hang_atom, int ms) {
        if (!self->current_sender() || !trusted(self, self->current_sender()->node()))
          return refuse_stranger(self, "a hang drill");
        // As this agent: a supervisor takes drills from this process only.
        const auto me = caf::actor_cast<caf::actor>(self);
        for (const auto& [supervising, name] : self->state.stages)
          caf::send_as(me, supervising, hang_atom::value, name, ms);
      },
      [=](add_replica_atom, int r, const scheduler_actor& scheduler, health_monitor_actor health) -> caf::result<int> {
        auto& st = self->state;
        if (!joined(self)) return refused(st, "join the cluster first");
        if (!st.started) return refused(st, "start the node first");
        if (r < 0 || size_t(r) >= st.schedulers.size() || !scheduler)
          return refused(st, "no replica " + std::to_string(r) + " to add");
        if (st.schedulers[size_t(r)])
          return refused(st, "replica " + st.options.spec.replicas[size_t(r)].name + " runs here already");
        return start_replica_here(self, size_t(r), scheduler, health);
      },
      [=](remove_replica_atom, int r) -> caf::result<int> {
        auto& st = self->state;
        if (!joined(self)) return refused(st, "join the cluster first");
        if (r < 0 || size_t(r) >= st.schedulers.size())
          return refused(st, "no replica " + std::to_string(r) + " to remove");
        // Its scheduler is stopped next: that is not the head going away.
        if (st.schedulers[size_t(r)]) self->demonitor(st.schedulers[size_t(r)].address());
        st.schedulers[size_t(r)] = nullptr;
        const caf::actor s = std::exchange(st.supervisors[size_t(r)], nullptr);
        if (!s) return 0;
        std::erase_if(st.stages, [&](const auto& stage) { return stage.first == s; });
        const int parts = std::exchange(st.parts[size_t(r)], 0);
        // Unlinked first: the supervisor's shutdown must not take this agent with it.
        self->unlink_from(s);
        self->monitor(s);
        self->send_exit(s, caf::exit_reason::user_shutdown);
        auto promise = self->make_response_promise<int>();
        st.stopping.emplace(s.address(), std::make_pair(promise, parts));
        return promise;
      },
  };
}

}  // namespace troupe
