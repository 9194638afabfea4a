// `troupe cluster up FILE [--port N]`: runs a cluster from its cluster.conf. This process
// is the head: it runs the gateway node (the gateway, scheduler, kv_manager and health
// monitor, plus that node's own stages and expert groups, on its GPU when it has one),
// starts a `troupe node` process for every other node whose port is 0 (nodes with a port
// are started on their hosts with `troupe node --config FILE --name NAME`), each on its own
// GPU or CPU as the file says, joins each with the cluster secret, waits until
// every stage and expert group is ready, and serves the OpenAI API until SIGTERM. A node
// process it started that dies is started again and given its part back (node_keeper).
// Replicas are added and removed at runtime through the gateway's /admin/replicas
// (the cluster_head actor, which owns the running cluster); a replica with `start = no` waits for its add.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "actors/cluster_engine.hpp"
#include "actors/cluster_head.hpp"
#include "actors/error_message.hpp"
#include "actors/node_agent.hpp"
#include "actors/shutdown.hpp"
#include "cli/args.hpp"
#include "cli/cluster_system.hpp"
#include "cli/commands.hpp"
#include "cli/node_keeper.hpp"
#include "cli/node_processes.hpp"
#include "cli/node_watch.hpp"
#include "cli/serve_gateway.hpp"
#include "cluster/cert_authority.hpp"
#include "transport/ucx_transport.hpp"

namespace troupe::cli {
namespace {

// What this version runs of a valid file; the rest is refused with a reason.
status supported(const cluster_spec& spec) {
  // Transport tags carry a replica and a stage in 8 bits each (actors/stage.cpp).
  if (spec.replicas.size() > 256) return error{spec.file.string() + ": more than 256 replicas"};
  for (const replica_spec& r : spec.replicas)
    if (r.stages.size() > 256)
      return error{spec.file.string() + ":" + std::to_string(r.line) + ": replica " + r.name +
                   " has more than 256 stages"};
  return ok();
}

// The agent of a node in another process, reached over its control link (cli/cluster_system);
// retried until the deadline, since a node may still be starting, but a certificate or TLS
// mismatch fails at once.
result<node_agent_actor> reach(caf::actor_system& system, const cluster_spec& spec, const node_spec& node, int port,
                               std::chrono::steady_clock::time_point deadline) {
  std::string last;
  do {
    auto reached = connect_agent(system, spec, spec.gateway.node, node.address, port);
    if (reached.agent) return reached.agent;
    last = reached.why;
    if (reached.lasting) return error{"node " + node.name + ": " + last};
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  } while (std::chrono::steady_clock::now() < deadline);
  return error{"node " + node.name + " at " + node.address + ":" + std::to_string(port) +
               " did not answer within the startup timeout (" + last + ")"};
}

// A cluster whose every node this process starts shares its files, so it makes its
// certificates itself the first time (as `troupe cluster certs` would); nodes on other
// hosts need theirs copied there first.
status certificates_at_first_start(const cluster_spec& spec) {
  if (spec.cluster.certs.empty() || std::filesystem::exists(spec.cluster.certs / "ca.crt")) return ok();
  const bool all_started_here = std::all_of(spec.nodes.begin(), spec.nodes.end(), [&](const node_spec& n) {
    return n.name == spec.gateway.node || n.port == 0;
  });
  if (!all_started_here) return ok();  // the missing files are named when they are read
  auto made = make_cluster_certs(spec);
  if (!made) return made.err();
  std::fprintf(stderr, "troupe cluster up: made the cluster's CA and a certificate per node in %s\n",
               spec.cluster.certs.c_str());
  return ok();
}

// Node processes started here share this machine's cores with the head, and OpenMP threads
// that spin between parallel regions take them from the others' work (the demo cluster at
// concurrency 8 on 2 cores: 171 tok/s spinning, 422 passive). OpenMP reads the policy only
// when the process starts, so the head runs itself again with it set; the nodes inherit it.
void share_cores_politely(int argc, char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  setenv("OMP_WAIT_POLICY", "passive", /*overwrite=*/1);
  std::vector<char*> args{const_cast<char*>("troupe"), const_cast<char*>("cluster"), const_cast<char*>("up")};
  for (int i = 0; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  execv("/proc/self/exe", args.data());
  std::fprintf(stderr, "troupe cluster up: could not run again with OMP_WAIT_POLICY=passive: %s\n", strerror(errno));
}

// How the head restarts the node processes it started: after 200 ms, and one that ended
// more than [cluster] max_node_restarts times within node_restart_window_s (20 within a
// minute unless set) is left down. A node that crashes on every start ends a startup
// timeout at a time.
restart_policy node_restarts(const cluster_settings& c) {
  return {c.max_node_restarts, c.node_restart_window, std::chrono::milliseconds(200)};
}

int fail(const std::string& message, int code = 1) {
  std::fprintf(stderr, "troupe cluster up: %s\n", message.c_str());
  return code;
}

}  // namespace

// argv: FILE, then the flags (--port N overrides [gateway] port; --warmup-requests N as
// troupe serve's).
int cluster_up_command(int argc, char** argv) {
  if (argc < 1 || argv[0][0] == '-') return fail("usage: troupe cluster up FILE [--port N] [--warmup-requests N]", 2);
  auto a = args::parse(argc - 1, argv + 1, {});
  if (!a) return fail(a.err().message, 2);
  auto port = a->take_int("--port", -1);
  auto warmup = a->take_int("--warmup-requests", 0);
  if (auto s = a->finish(); !s || !port || !warmup)
    return fail(!s ? s.err().message : !port ? port.err().message : warmup.err().message, 2);
  if (*warmup < 0) return fail("--warmup-requests must be 0 or more", 2);
  auto checked = read_cluster_with_model(argv[0]);
  if (!checked) return fail(checked.err().message, 2);
  const cluster_spec& spec = checked->spec;
  if (auto runs = supported(spec); !runs) return fail(runs.err().message, 2);
  const std::string& head = spec.gateway.node;  // the first node's when the file names none
  if (std::any_of(spec.nodes.begin(), spec.nodes.end(),
                  [&](const node_spec& n) { return n.name != head && n.port == 0; }))
    share_cores_politely(argc, argv);

  if (auto made = certificates_at_first_start(spec); !made) return fail(made.err().message, 2);
  caf::actor_system_config config;
  if (auto configured = configure_cluster_system(config, spec, head); !configured)
    return fail(configured.err().message, 2);
  const sigset_t stop_signals = block_stop_signals();
  auto codec = load_text_codec(spec.model.path);
  if (!codec) return fail(codec.err().message);
  const auto deadline = std::chrono::steady_clock::now() + spec.cluster.startup_timeout;
  std::map<std::string, std::string> netns;
  for (const node_spec& n : spec.nodes)
    if (!n.netns.empty()) netns[n.name] = n.netns;
  node_processes children(std::move(netns));
  std::vector<int> ports;
  for (const node_spec& n : spec.nodes) {
    if (n.name == head || n.port != 0) {
      ports.push_back(n.port);
      continue;
    }
    auto started = children.start(spec.file, n.name, deadline);
    if (!started) return fail(started.err().message);
    ports.push_back(*started);
  }

  auto link = ucx_transport::create(std::chrono::duration_cast<std::chrono::milliseconds>(spec.cluster.step_timeout),
                                    link_addresses(spec, *spec.node(head)));
  if (!link) return fail("the transport: " + link.err().message);
  caf::actor_system system{config};
  std::vector<node_agent_actor> agents;
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    const node_spec& n = spec.nodes[i];
    if (n.name == head) {
      // The head's own stuck stages are replaced in this process, where that is safe.
      restart_policy restarts;
      restarts.replace_stuck = n.gpus.empty();
      node_agent_options options{spec,
                                 int(i),
                                 backend_options_of(spec),
                                 restarts,
                                 std::shared_ptr<transport>(std::move(*link)),
                                 ready_vocabulary(vocabulary_of(*codec->tok))};
      agents.push_back(system.spawn(node_agent, std::move(options)));
      continue;
    }
    auto agent = reach(system, spec, n, ports[i], deadline);
    if (!agent) return fail(agent.err().message);
    agents.push_back(*agent);
  }
  std::fprintf(stderr, "troupe cluster up: reached all %zu nodes; joining them and starting their parts\n",
               agents.size());
  scheduler_options scheduling;
  scheduling.max_num_seqs = spec.engine.max_num_seqs;
  scheduling.max_num_batched_tokens = spec.engine.max_num_batched_tokens;
  scheduling.micro_batches = spec.engine.pipeline_micro_batches;
  auto cluster = start_cluster_engine(system, spec, checked->model, agents, scheduling);
  if (!cluster) return fail(cluster.err().message);
  gateway_options g;
  g.routing = routing_policy_named(spec.gateway.routing).value();
  g.served_model_names = served_model_names(spec.model.served_model_name.empty() ? spec.model.path.filename().string()
                                                                                 : spec.model.served_model_name);
  g.api_key = spec.gateway.api_key;
  g.admin_key = spec.gateway.admin_key;
  g.protect_metrics = spec.gateway.protect_metrics;
  g.special_tokens_in_content = spec.gateway.special_tokens_in_content;
  g.max_pending = size_t(spec.gateway.max_pending);
  g.warmup_requests = *warmup;
  const node_agent_actor head_agent = agents[size_t(spec.node(head) - spec.nodes.data())];
  served_engine e{cluster->config,
                  cluster->health,
                  cluster->replicas,
                  cluster->max_model_len,
                  cluster->num_blocks,
                  {},
                  [&system, head_agent](int ms) {
                    caf::scoped_actor self{system, /*hide=*/true};
                    self->send(head_agent, hang_atom::value, ms);
                  }};
  // From here the head actor owns the cluster: a node's rejoin and a replica's start or
  // stop (/admin/replicas) are its messages, one at a time.
  const cluster_head_actor cluster_owner = system.spawn<caf::detached>(cluster_head, &spec, std::move(*cluster));
  g.replica_control = cluster_owner;
  // A node whose agent the head loses (its process died, or stopped answering heartbeats
  // for the connection timeout: stopped, hung), or one of whose stages is stuck in a step,
  // is killed if it still runs, and restarted.
  std::atomic<node_keeper*> keeping{nullptr};
  const caf::actor watch = spawn_node_watch(system, spec, [&keeping](const std::string& node) {
    if (node_keeper* k = keeping.load()) k->lost(node);
  });
  caf::anon_send(e.health, subscribe_atom::value, watch);
  node_keeper keeper(
      children, spec.file, node_restarts(spec.cluster), spec.cluster.startup_timeout,
      [&](const std::string& name, int node_port) -> status {
        const auto at =
            std::find_if(spec.nodes.begin(), spec.nodes.end(), [&](const node_spec& n) { return n.name == name; });
        auto agent =
            reach(system, spec, *at, node_port, std::chrono::steady_clock::now() + spec.cluster.startup_timeout);
        if (!agent) return agent.err();
        caf::scoped_actor self{system, /*hide=*/true};
        status back = ok();
        self->request(cluster_owner, caf::infinite, rejoin_atom::value, int(at - spec.nodes.begin()), *agent)
            .receive([](bool) {}, [&](const caf::error& why) { back = error{error_message(why)}; });
        if (back) watch_node(watch, name, *agent);
        return back;
      });
  keeping = &keeper;
  for (size_t i = 0; i < spec.nodes.size(); ++i)
    if (spec.nodes[i].name != head && spec.nodes[i].port == 0) watch_node(watch, spec.nodes[i].name, agents[i]);
  http::server_options http;
  http.host = spec.gateway.host;
  http.port = *port >= 0 ? *port : spec.gateway.port;
  http.send_timeout = spec.gateway.send_timeout;
  http.max_connections = size_t(spec.gateway.max_connections);
  e.stop = [&] {
    keeping = nullptr;  // no node rejoins a cluster that is stopping
    keeper.stop();
    caf::scoped_actor self{system, /*hide=*/true};
    // A replica's start or stop under way ends first: the head takes its exit after it.
    shutdown(self, {watch, caf::actor_cast<caf::actor>(cluster_owner)});
  };
  return serve_until_stopped(system, e, *codec, g, http, stop_signals, "troupe cluster up");
}

}  // namespace troupe::cli
