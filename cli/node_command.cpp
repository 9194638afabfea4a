// `troupe node --config FILE --name NAME [--port N]`: one node process of a cluster. It
// publishes its node_agent on the node's control address and port (--port overrides the
// file's; 0 picks a free one), prints "troupe node NAME: control on ADDRESS:PORT", and
// runs what the head starts there until SIGTERM, SIGINT, or the head going away. A hang
// drill's signal (base/hang_drill_signal.hpp) goes to its stages.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <future>

#include "actors/node_agent.hpp"
#include "actors/shutdown.hpp"
#include "base/hang_drill_signal.hpp"
#include "cli/args.hpp"
#include "cli/cluster_system.hpp"
#include "cli/commands.hpp"
#include "cli/serve_gateway.hpp"
#include "cluster/gpu_placements.hpp"
#include "text/grammar/token_vocabulary.hpp"
#include "text/tokenizer/tokenizer.hpp"
#include "transport/ucx_transport.hpp"

namespace troupe::cli {

// How long a stop signal waits for the agent to stop its actors (a step in flight finishes).
constexpr auto stop_grace = std::chrono::seconds(10);

namespace {

// The tokenizer's vocabulary when one of the node's stages samples (a replica's last), read
// on a thread of its own: a restarted node is back without waiting for it. None otherwise.
pending_vocabulary vocabulary_for(const cluster_spec& spec, const std::string& node) {
  const bool samples = std::any_of(spec.replicas.begin(), spec.replicas.end(), [&](const replica_spec& r) {
    return !r.stages.empty() && r.stages.back().node == node;
  });
  if (!samples) return {};
  return std::async(std::launch::async,
                    [path = spec.model.path / "tokenizer.json"]() -> std::shared_ptr<const token_vocabulary> {
                      auto tok = tokenizer::load(path);
                      return tok ? vocabulary_of(*tok) : nullptr;
                    })
      .share();
}

}  // namespace

int node_command(int argc, char** argv) {
  auto a = args::parse(argc, argv, {});
  if (!a) {
    std::fprintf(stderr, "troupe node: %s\n", a.err().message.c_str());
    return 2;
  }
  auto file = a->take("--config");
  auto name = a->take("--name");
  auto port = a->take_int("--port", -1);
  if (auto s = a->finish(); !s || !file || !name || !port) {
    std::fprintf(stderr, "troupe node: %s\nusage: troupe node --config FILE --name NAME [--port N]\n",
                 !s      ? s.err().message.c_str()
                 : !port ? port.err().message.c_str()
                         : "--config and --name are required");
    return 2;
  }
  auto spec = read_cluster_spec(*file);
  if (spec)
    if (auto runs = check_gpu_placements(*spec); !runs) spec = runs.err();
  if (!spec) {
    std::fprintf(stderr, "troupe node: %s\n", spec.err().message.c_str());
    return 2;
  }
  int index = -1;
  std::string names;
  for (size_t i = 0; i < spec->nodes.size(); ++i) {
    if (spec->nodes[i].name == *name) index = int(i);
    names += (names.empty() ? "" : ", ") + spec->nodes[i].name;
  }
  if (index < 0) {
    std::fprintf(stderr, "troupe node: %s has no node %s (its nodes: %s)\n", file->c_str(), name->c_str(),
                 names.c_str());
    return 2;
  }
  const node_spec& me = spec->nodes[size_t(index)];
  const sigset_t stop_signals = block_stop_signals();
  auto link = ucx_transport::create(std::chrono::duration_cast<std::chrono::milliseconds>(spec->cluster.step_timeout),
                                    link_addresses(*spec, me));
  if (!link) {
    std::fprintf(stderr, "troupe node %s: the transport: %s\n", name->c_str(), link.err().message.c_str());
    return 1;
  }
  node_agent_options options;
  options.spec = *spec;
  options.node = index;
  options.backend = backend_options_of(*spec);
  options.link = std::shared_ptr<transport>(std::move(*link));
  options.vocabulary = vocabulary_for(*spec, me.name);

  caf::actor_system_config config;
  if (auto configured = configure_cluster_system(config, *spec, me.name); !configured) {
    std::fprintf(stderr, "troupe node %s: %s\n", name->c_str(), configured.err().message.c_str());
    return 2;
  }
  caf::actor_system system{config};
  auto agent = system.spawn(node_agent, std::move(options));
  const uint16_t wanted = uint16_t(*port >= 0 ? *port : me.port);
  auto published = publish_agent(system, agent, me.address, wanted);
  if (!published) {
    std::fprintf(stderr, "troupe node %s: cannot listen on %s:%d: %s\n", name->c_str(), me.address.c_str(), wanted,
                 published.err().message.c_str());
    caf::scoped_actor { system, /*hide=*/true } -> send_exit(agent, caf::exit_reason::user_shutdown);
    return 1;
  }
  if (!system.has_openssl_manager())
    std::fprintf(stderr, "troupe node %s: the control port is plaintext and unauthenticated (insecure = yes)\n",
                 name->c_str());
  std::printf("troupe node %s: control on %s:%u\n", name->c_str(), me.address.c_str(), unsigned(*published));
  std::fflush(stdout);
  // Whoever started this process may stop reading its stdout once it has the port: anything
  // printed later (a library's message) goes to stderr instead of into a closed pipe.
  dup2(STDERR_FILENO, STDOUT_FILENO);

  caf::scoped_actor self{system, /*hide=*/true};
  self->monitor(agent);
  const timespec poll{0, 200'000'000};
  bool ended = false;
  while (!ended) {
    siginfo_t info{};
    const int signal = sigtimedwait(&stop_signals, &info, &poll);
    if (signal == hang_drill_signal) {
      if (auto ms = hang_drill_ms(info)) {
        std::fprintf(stderr, "troupe node %s: hang drill: every stage here blocks its next step for %d ms\n",
                     name->c_str(), *ms);
        self->send(agent, hang_atom::value, *ms);
      }
    } else if (signal > 0) {
      shutdown(self, {caf::actor_cast<caf::actor>(agent)}, stop_grace);
      break;
    }
    self->receive([&](const caf::down_msg&) { ended = true; }, caf::after(std::chrono::seconds(0)) >> [] {});
  }
  // The agent is down and its stages and expert groups with it. The actor system's own
  // teardown could still wait forever: CAF keeps an actor whose handle went to another node
  // alive for that node, and a head that vanished (SIGKILL) never lets go. Nothing is left
  // to do here, so the process ends without it.
  std::fprintf(stderr, "troupe node %s: stopped\n", name->c_str());
  std::fflush(nullptr);
  std::_Exit(0);
}

}  // namespace troupe::cli
