#include "actors/cluster_engine.hpp"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "actors/error_message.hpp"
#include "actors/health_monitor.hpp"
#include "actors/kv_manager.hpp"
#include "actors/shutdown.hpp"
#include "cluster/join_proof.hpp"

namespace troupe {
namespace {

// One blocking request to a node agent, its error prefixed with the node's name.
template <class Result, class... Ts>
result<Result> ask(caf::scoped_actor& self, const node_agent_actor& agent, std::chrono::milliseconds timeout,
                   const std::string& node, Ts&&... xs) {
  result<Result> out = error{"node " + node + ": no answer"};
  self->request(agent, caf::duration{timeout}, std::forward<Ts>(xs)...)
      .receive([&](Result& r) { out = std::move(r); },
               [&](caf::error& e) {
                 if (e == caf::sec::request_timeout) {
                   out = error{"node " + node + ": no answer within " + std::to_string(timeout.count()) +
                               " ms (its process is down or hung)"};
                   return;
                 }
                 const std::string why = self->system().render(e);
                 out = error{why.find("node " + node) != std::string::npos ? why : "node " + node + ": " + why};
               });
  return out;
}

// The head proves the cluster secret to node `name`'s agent: its transport address.
result<std::vector<uint8_t>> join(caf::scoped_actor& self, const cluster_spec& spec, const node_agent_actor& agent,
                                  std::chrono::milliseconds timeout, const std::string& name) {
  auto nonce = ask<std::vector<uint8_t>>(self, agent, timeout, name, challenge_atom::value);
  if (!nonce) return nonce.err();
  auto joined = ask<node_description>(self, agent, timeout, name, join_atom::value,
                                      join_proof(spec.cluster.secret, spec.cluster.name, *nonce));
  if (!joined) return joined.err();
  if (joined->name != name)
    return error{"the process at node " + name + "'s address is node " + joined->name + " of its cluster.conf"};
  return joined->transport_address;
}

// For what may load weights (a join, a node's start): the startup bound.
std::chrono::milliseconds control_timeout(const cluster_spec& spec) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(spec.cluster.startup_timeout);
}

// For what an agent answers at once (a replica's parts spawned or stopped): a node that
// says nothing for connection_timeout is down or hung, as its heartbeats would say.
std::chrono::milliseconds quick_control_timeout(const cluster_spec& spec) { return spec.cluster.connection_timeout; }

// Waits until the health monitor knows `expected` components whose names begin with
// `prefix` and each is ready.
status wait_until_ready(caf::scoped_actor& self, const health_monitor_actor& health, size_t expected,
                        std::chrono::steady_clock::time_point deadline, const std::string& prefix = "") {
  std::vector<component_health> last;
  while (std::chrono::steady_clock::now() < deadline) {
    self->request(health, caf::infinite, health_atom::value)
        .receive([&](std::vector<component_health> v) { last = v; }, [](caf::error&) {});
    std::erase_if(last, [&](const component_health& c) { return c.name.rfind(prefix, 0) != 0; });
    if (last.size() >= expected &&
        std::all_of(last.begin(), last.end(), [](const component_health& c) { return c.ready; }))
      return ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::string waiting;
  for (const auto& c : last)
    if (!c.ready) waiting += (waiting.empty() ? "" : ", ") + c.name;
  return error{"the cluster was not ready within its startup timeout; not ready: " +
               (waiting.empty() ? std::string("components that never reported") : waiting)};
}

// Replica `r`'s kv manager and scheduler in this process.
scheduler_actor spawn_replica_engine(caf::actor_system& system, const cluster_spec& spec, running_cluster& c,
                                     size_t r) {
  const replica_spec& replica = spec.replicas[r];
  // Every node's CPU stages keep one recurrent-state slot per sequence the engine may run.
  const int state_slots = c.config.has_linear_layers() ? spec.engine.max_num_seqs : 0;
  auto kv = system.spawn(kv_manager, c.num_blocks, spec.engine.block_size, state_slots);
  scheduler_options options = c.scheduling;
  options.max_model_len = c.max_model_len;
  options.pipeline_stages = int(replica.stages.size());
  options.expert_groups = int(replica.experts.size());
  options.component_prefix = replica.name + "/";
  options.step_timeout =
      caf::duration{std::chrono::duration_cast<std::chrono::milliseconds>(spec.cluster.step_timeout)};
  auto s = system.spawn(troupe::scheduler, options, kv);
  c.replica_actors[r] = {caf::actor_cast<caf::actor>(kv), caf::actor_cast<caf::actor>(s)};
  c.replicas[r].scheduler = s;
  c.schedulers[r] = s;
  return s;
}

}  // namespace

void running_cluster::stop(caf::actor_system& system) {
  caf::scoped_actor self{system, /*hide=*/true};
  std::vector<caf::actor> all = actors;
  for (const auto& engine : replica_actors) all.insert(all.end(), engine.begin(), engine.end());
  shutdown(self, all);
}

result<running_cluster> start_cluster_engine(caf::actor_system& system, const cluster_spec& spec,
                                             const model_config& model, const std::vector<node_agent_actor>& agents,
                                             scheduler_options scheduler) {
  caf::scoped_actor self{system, /*hide=*/true};
  const auto deadline = std::chrono::steady_clock::now() + spec.cluster.startup_timeout;
  const auto control = control_timeout(spec);
  std::vector<std::vector<uint8_t>> addresses;
  for (size_t i = 0; i < agents.size(); ++i) {
    auto address = join(self, spec, agents[i], control, spec.nodes[i].name);
    if (!address) return address.err();
    addresses.push_back(std::move(*address));
  }
  int num_blocks = 0;
  for (size_t i = 0; i < agents.size(); ++i) {
    auto blocks = ask<int>(self, agents[i], control, spec.nodes[i].name, load_atom::value);
    if (!blocks) return blocks.err();
    if (*blocks > 0) num_blocks = num_blocks == 0 ? *blocks : std::min(num_blocks, *blocks);
  }
  running_cluster c;
  c.config = model;
  c.num_blocks = num_blocks;
  const int model_len = spec.engine.max_model_len > 0 ? spec.engine.max_model_len : c.config.max_position_embeddings;
  c.max_model_len = std::min(model_len, num_blocks * spec.engine.block_size);
  if (c.max_model_len < 2) return error{"the cluster's KV cache holds fewer than two tokens of this model"};
  c.health = system.spawn(health_monitor, spec.engine.progress_timeout);
  c.actors.push_back(caf::actor_cast<caf::actor>(c.health));
  // The gateway node's agent, in this process, stops with the rest.
  for (size_t i = 0; i < agents.size(); ++i)
    if (spec.nodes[i].name == spec.gateway.node) c.actors.push_back(caf::actor_cast<caf::actor>(agents[i]));
  c.scheduling = scheduler;
  c.replica_actors.resize(spec.replicas.size());
  c.schedulers.resize(spec.replicas.size());
  size_t components = 0;
  for (size_t r = 0; r < spec.replicas.size(); ++r) {
    const replica_spec& replica = spec.replicas[r];
    c.replicas.push_back({replica.name, {}, replica.weight, replica.name + "/"});
    if (!replica.start) continue;
    spawn_replica_engine(system, spec, c, r);
    components += replica.stages.size() + replica.experts.size();
  }
  for (size_t i = 0; i < agents.size(); ++i) {
    auto started =
        ask<int>(self, agents[i], control, spec.nodes[i].name, start_atom::value, addresses, c.schedulers, c.health);
    if (!started) {
      c.stop(system);
      return started.err();
    }
  }
  if (auto ready = wait_until_ready(self, c.health, components, deadline); !ready) {
    c.stop(system);
    return ready.err();
  }
  c.agents = agents;
  c.addresses = std::move(addresses);
  return c;
}

status rejoin_node(caf::actor_system& system, const cluster_spec& spec, running_cluster& cluster, size_t node,
                   node_agent_actor agent) {
  caf::scoped_actor self{system, /*hide=*/true};
  const auto control = control_timeout(spec);
  const std::string& name = spec.nodes[node].name;
  auto address = join(self, spec, agent, control, name);
  if (!address) return address.err();
  auto loaded = ask<int>(self, agent, control, name, load_atom::value);
  if (!loaded) return loaded.err();
  if (*loaded > 0 && *loaded < cluster.num_blocks)
    return error{"node " + name + " came back with " + std::to_string(*loaded) + " KV blocks a stage, fewer than the " +
                 std::to_string(cluster.num_blocks) + " the cluster runs with"};
  cluster.agents[node] = agent;
  cluster.addresses[node] = *address;
  // A node that does not answer is down too (both killed at once): it gets every address
  // when it rejoins, and until then this node is started with none for it, so that it does
  // not wait on a dead one. A node that answers with an error (it cannot reach this one
  // yet: a cut link) is up: its transport keeps the new address and reaches it once it can.
  for (size_t i = 0; i < cluster.agents.size(); ++i) {
    if (i == node) continue;
    bool silent = false;
    std::string why;
    self->request(cluster.agents[i], caf::duration{quick_control_timeout(spec)}, repoint_atom::value, int(node),
                  *address)
        .receive([](int) {},
                 [&](caf::error& e) {
                   silent = e == caf::sec::request_timeout || e == caf::sec::request_receiver_down;
                   why = silent ? "node " + spec.nodes[i].name + " does not answer" : error_message(e);
                 });
    if (why.empty()) continue;
    std::fprintf(stderr, "troupe cluster up: node %s is back, but %s (%s)\n", name.c_str(), why.c_str(),
                 silent ? "it gets the address when it rejoins" : "it reaches it once it can");
    if (silent) cluster.addresses[i].clear();
  }
  auto started =
      ask<int>(self, agent, control, name, start_atom::value, cluster.addresses, cluster.schedulers, cluster.health);
  if (!started) return started.err();
  return ok();
}

result<scheduler_actor> start_replica(caf::actor_system& system, const cluster_spec& spec, running_cluster& cluster,
                                      size_t r) {
  caf::scoped_actor self{system, /*hide=*/true};
  const auto deadline = std::chrono::steady_clock::now() + spec.cluster.startup_timeout;
  const auto control = quick_control_timeout(spec);
  const replica_spec& replica = spec.replicas[r];
  const scheduler_actor s = spawn_replica_engine(system, spec, cluster, r);
  status started = ok();
  for (size_t i = 0; i < cluster.agents.size() && started; ++i)
    if (auto n = ask<int>(self, cluster.agents[i], control, spec.nodes[i].name, add_replica_atom::value, int(r), s,
                          cluster.health);
        !n)
      started = n.err();
  if (started)
    started = wait_until_ready(self, cluster.health, replica.stages.size() + replica.experts.size(), deadline,
                               replica.name + "/");
  if (!started) {
    auto stopped = stop_replica(system, spec, cluster, r);
    return error{"replica " + replica.name + ": " + started.err().message +
                 (stopped ? "" : "; stopping what started: " + stopped.err().message)};
  }
  return s;
}

result<int> stop_replica(caf::actor_system& system, const cluster_spec& spec, running_cluster& cluster, size_t r) {
  caf::scoped_actor self{system, /*hide=*/true};
  // A node that does not answer still gets the remove, after any add it has not taken yet.
  const auto control = quick_control_timeout(spec);
  const replica_spec& replica = spec.replicas[r];
  result<int> parts = 0;
  for (size_t i = 0; i < cluster.agents.size(); ++i) {
    auto n = ask<int>(self, cluster.agents[i], control, spec.nodes[i].name, remove_replica_atom::value, int(r));
    if (n && parts) *parts += *n;
    if (!n && parts) parts = error{"replica " + replica.name + ": " + n.err().message};
  }
  self->send(cluster.health, forget_atom::value, replica.name + "/");
  shutdown(self, cluster.replica_actors[r]);
  cluster.replica_actors[r].clear();
  cluster.replicas[r].scheduler = nullptr;
  cluster.schedulers[r] = nullptr;
  return parts;
}

}  // namespace troupe
