// `troupe cluster status FILE [--url URL] [--api-key KEY]`: asks a running cluster's
// gateway (at [gateway] host and port unless --url says otherwise) for /admin/status and
// prints each running replica's state, weight and load and each stage and expert group
// with the node and device it runs on (from FILE), what it holds, its health and restarts.
// Exit status 0 when every component is ready, 1 when one is not or the gateway does not
// answer, 2 for a bad file or flag.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/http_client.hpp"
#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cluster/cluster_spec.hpp"
#include "gateway/admin/admin_status_json.hpp"

namespace troupe::cli {
namespace {

int fail(const std::string& message, int code) {
  std::fprintf(stderr, "troupe cluster status: %s\n", message.c_str());
  return code;
}

// "node device holds" of component `name` ("REPLICA/stage_K" or "REPLICA/expert_group_G").
std::string placement_of(const cluster_spec& spec, const std::string& name, const model_config& model) {
  for (const replica_spec& r : spec.replicas) {
    const std::string prefix = r.name + "/";
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string part = name.substr(prefix.size());
    auto describe = [&](const std::vector<placement>& list, const std::string& kind, const char* what, int count) {
      if (part.rfind(kind, 0) != 0) return std::string();
      const size_t i = std::strtoul(part.c_str() + kind.size(), nullptr, 10);
      if (i >= list.size()) return std::string();
      const placement& p = list[i];
      const std::string device = p.gpu ? "cuda:" + std::to_string(*p.gpu) : "cpu";
      char line[160];
      std::snprintf(line, sizeof line, "%-10s %-7s %s %d-%d", p.node.c_str(), device.c_str(), what, p.first,
                    p.last.value_or(count - 1));
      return std::string(line);
    };
    if (auto s = describe(r.stages, "stage_", "layers", model.num_layers); !s.empty()) return s;
    if (auto e = describe(r.experts, "expert_group_", "experts", model.num_experts); !e.empty()) return e;
  }
  return "?";
}

}  // namespace

// argv: FILE, then the flags.
int cluster_status_command(int argc, char** argv) {
  if (argc < 1 || argv[0][0] == '-') return fail("usage: troupe cluster status FILE [--url URL] [--api-key KEY]", 2);
  auto a = args::parse(argc - 1, argv + 1, {});
  if (!a) return fail(a.err().message, 2);
  auto url = a->take("--url");
  auto key = a->take("--api-key");
  if (auto s = a->finish(); !s) return fail(s.err().message, 2);
  auto checked = read_cluster_with_model(argv[0]);
  if (!checked) return fail(checked.err().message, 2);
  const cluster_spec& spec = checked->spec;
  const model_config& model = checked->model;
  const std::string base = url.value_or("http://" + spec.gateway.host + ":" + std::to_string(spec.gateway.port));
  auto address = bench::parse_base_url(base);
  if (!address) return fail(address.err().message, 2);
  // /admin/* takes the admin key when the file has one.
  const std::string credential =
      key.value_or(spec.gateway.admin_key.empty() ? spec.gateway.api_key : spec.gateway.admin_key);
  const std::string headers = credential.empty() ? "" : "Authorization: Bearer " + credential + "\r\n";
  bench::http_client client(*address, std::chrono::seconds(10));
  std::string body;
  auto code = client.request("GET", address->path_prefix + "/admin/status", headers, "",
                             [&](int, std::string_view bytes) { body.append(bytes); });
  if (!code) return fail("the gateway at " + base + " does not answer: " + code.err().message, 1);
  if (*code != 200) return fail("the gateway at " + base + " answered " + std::to_string(*code) + ": " + body, 1);
  auto status = parse_status_json(body);
  if (!status) return fail(status.err().message, 1);

  std::printf("cluster %s, gateway %s\n\n", spec.cluster.name.c_str(), base.c_str());
  std::printf("%-12s %-9s %7s %9s %9s %8s %8s %15s\n", "replica", "state", "weight", "in flight", "routable", "running",
              "waiting", "KV blocks used");
  for (const replica_status& r : status->replicas) {
    const bool routable =
        r.route.state == replica_state::serving && r.route.healthy && !r.route.circuit_open && r.route.weight > 0;
    std::printf("%-12s %-9s %7.3g %9d %9s %8d %8d %7d/%-7d\n", r.route.name.c_str(),
                std::string(state_name(r.route.state)).c_str(), r.route.weight, r.route.in_flight,
                routable               ? "yes"
                : r.route.circuit_open ? "circuit"
                : r.route.weight > 0   ? "down"
                                       : "drained",
                r.engine.running, r.engine.waiting, r.engine.kv.used_blocks, r.engine.kv.total_blocks);
  }
  std::printf("\n%-24s %-10s %-7s %-16s %-6s %8s %10s\n", "component", "node", "device", "holds", "ready", "restarts",
              "last step");
  bool all_ready = true;
  for (const component_health& c : status->components) {
    all_ready = all_ready && c.ready;
    const bool stage = c.name.find("/stage_") != std::string::npos;
    char last[32] = "-";  // expert groups report no steps of their own
    if (stage) std::snprintf(last, sizeof last, "%.1f s ago", c.seconds_since_progress);
    std::printf("%-24s %-35s %-6s %8u %10s\n", c.name.c_str(), placement_of(spec, c.name, model).c_str(),
                c.ready   ? "yes"
                : c.stuck ? "stuck"
                          : "no",
                c.restarts, last);
  }
  return all_ready ? 0 : 1;
}

}  // namespace troupe::cli
