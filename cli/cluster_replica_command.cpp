// `troupe cluster add FILE NAME [--weight W] [--ramp-s S]` and `troupe cluster remove FILE
// NAME`, each with [--url URL] [--api-key KEY] [--timeout-s N]: asks a running cluster's
// gateway (at [gateway] host and port unless --url says otherwise) to start replica NAME
// of FILE, which joins routing once every stage and expert group of it is ready, or to
// drain it (its calls in flight finish whole) and stop it; then waits until that is done.
// Exit status 0 when it is, 1 when the gateway refused it, the change failed or the
// timeout passed, 2 for a bad file or flag.
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <thread>

#include "bench/http_client.hpp"
#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cluster/cluster_spec.hpp"
#include "gateway/admin/admin_replicas_json.hpp"

namespace troupe::cli {

// argv: add or remove, FILE, NAME, then the flags.
int cluster_replica_command(int argc, char** argv) {
  const std::string verb = argc > 0 ? argv[0] : "";
  const bool add = verb == "add";
  auto fail = [&](const std::string& message, int code) {
    std::fprintf(stderr, "troupe cluster %s: %s\n", verb.c_str(), message.c_str());
    return code;
  };
  if (argc < 3 || argv[1][0] == '-' || argv[2][0] == '-')
    return fail(std::string("usage: troupe cluster ") +
                    (add ? "add FILE NAME [--weight W] [--ramp-s S]" : "remove FILE NAME") +
                    " [--url URL] [--api-key KEY] [--timeout-s N]",
                2);
  auto a = args::parse(argc - 3, argv + 3, {});
  if (!a) return fail(a.err().message, 2);
  auto url = a->take("--url");
  auto key = a->take("--api-key");
  // NaN: not given (a NaN given is refused as no number).
  constexpr double absent = std::numeric_limits<double>::quiet_NaN();
  auto weight = add ? a->take_double("--weight", absent) : absent;
  auto ramp = add ? a->take_double("--ramp-s", absent) : absent;
  if (!weight || !ramp) return fail(!weight ? weight.err().message : ramp.err().message, 2);
  auto timeout = a->take_int("--timeout-s", 600);
  if (auto s = a->finish(); !s || !timeout) return fail(!s ? s.err().message : timeout.err().message, 2);
  auto checked = read_cluster_spec(argv[1]);
  if (!checked) return fail(checked.err().message, 2);
  const cluster_spec& spec = *checked;
  const std::string name = argv[2];
  const std::string base = url.value_or("http://" + spec.gateway.host + ":" + std::to_string(spec.gateway.port));
  auto address = bench::parse_base_url(base);
  if (!address) return fail(address.err().message, 2);
  // /admin/* takes the admin key when the file has one.
  const std::string credential =
      key.value_or(spec.gateway.admin_key.empty() ? spec.gateway.api_key : spec.gateway.admin_key);
  const std::string headers = credential.empty() ? "" : "Authorization: Bearer " + credential + "\r\n";
  auto given = [](double v) { return std::isnan(v) ? std::nullopt : std::optional<double>(v); };
  const std::string body = add ? replica_add_body(given(*weight), given(*ramp)) : "";
  bench::http_client client(*address, std::chrono::seconds(10));
  auto call = [&](const char* method, const std::string& path,
                  const std::string& content) -> result<std::pair<int, std::string>> {
    std::string answer;
    auto code = client.request(method, address->path_prefix + path, headers, content,
                               [&](int, std::string_view bytes) { answer.append(bytes); });
    if (!code) return error{"the gateway at " + base + " does not answer: " + code.err().message};
    return std::make_pair(*code, std::move(answer));
  };
  auto posted = call("POST", "/admin/replicas/" + name + "/" + verb, body);
  if (!posted) return fail(posted.err().message, 1);
  if (posted->first != 202)
    return fail("the gateway answered " + std::to_string(posted->first) + ": " + posted->second, 1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(*timeout);
  const replica_state done = add ? replica_state::serving : replica_state::off;
  std::string last_state;
  while (std::chrono::steady_clock::now() < deadline) {
    auto listed = call("GET", "/admin/replicas", "");
    if (!listed) return fail(listed.err().message, 1);
    auto replicas = parse_replicas_json(listed->second);
    if (!replicas) return fail(replicas.err().message, 1);
    for (const replica_listing& r : *replicas) {
      if (r.name != name) continue;
      if (!r.last_error.empty()) return fail(r.last_error, 1);
      if (r.state == done) {
        std::printf("replica %s is %s\n", name.c_str(), add ? "serving" : "removed");
        return 0;
      }
      if (std::string(state_name(r.state)) != last_state) {
        last_state = state_name(r.state);
        std::printf("replica %s is %s (%d calls in flight)\n", name.c_str(), last_state.c_str(), r.in_flight);
        std::fflush(stdout);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return fail("replica " + name + " is still " + last_state + " after " + std::to_string(*timeout) + " s", 1);
}

}  // namespace troupe::cli
