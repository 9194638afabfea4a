// `troupe cluster check FILE`: reads a cluster.conf as `troupe cluster up` will, checks it
// against the model's config.json, and prints where each replica's stages and expert
// groups run; a mistake gives the file:line error and exit status 2.
#include <cstdio>
#include <string>

#include "cli/commands.hpp"
#include "cluster/cluster_spec.hpp"

namespace troupe::cli {
namespace {

std::string where(const placement& p) {
  return p.node + (p.gpu ? ":cuda:" + std::to_string(*p.gpu) : std::string(":cpu"));
}

int check(const char* file) {
  auto checked = read_cluster_with_model(file);
  if (!checked) {
    std::fprintf(stderr, "troupe cluster check: %s\n", checked.err().message.c_str());
    return 2;
  }
  const cluster_spec& spec = checked->spec;
  const model_config& model = checked->model;
  std::printf("%s: %s, %zu node(s), %zu replica(s); model %s (%d layers, %d experts)\n", file,
              spec.is_cluster ? "a cluster" : "a single node", spec.nodes.size(), spec.replicas.size(),
              spec.model.path.string().c_str(), model.num_layers, model.num_experts);
  for (const node_spec& n : spec.nodes) std::printf("  node %s at %s:%d\n", n.name.c_str(), n.address.c_str(), n.port);
  for (const replica_spec& r : spec.replicas) {
    std::printf("  replica %s (weight %g%s)\n", r.name.c_str(), r.weight, r.start ? "" : ", not started: a standby");
    for (const placement& s : r.stages)
      std::printf("    stage layers %d-%d on %s\n", s.first, s.last.value_or(model.num_layers - 1), where(s).c_str());
    for (const placement& e : r.experts)
      std::printf("    experts %d-%d on %s\n", e.first, e.last.value_or(model.num_experts - 1), where(e).c_str());
  }
  return 0;
}

}  // namespace

int cluster_command(int argc, char** argv) {
  if (argc == 2 && std::string(argv[0]) == "check") return check(argv[1]);
  if (argc >= 2 && std::string(argv[0]) == "up") return cluster_up_command(argc - 1, argv + 1);
  if (argc >= 1 && std::string(argv[0]) == "certs") return cluster_certs_command(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[0]) == "status") return cluster_status_command(argc - 1, argv + 1);
  if (argc >= 1 && (std::string(argv[0]) == "add" || std::string(argv[0]) == "remove"))
    return cluster_replica_command(argc, argv);
  std::fprintf(stderr,
               "usage: troupe cluster check FILE | troupe cluster certs FILE | troupe cluster up FILE [--port N] | "
               "troupe cluster status FILE [--url URL] [--api-key KEY] | "
               "troupe cluster add FILE NAME [--weight W] [--ramp-s S] | troupe cluster remove FILE NAME\n");
  return 2;
}

}  // namespace troupe::cli
