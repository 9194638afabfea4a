// `troupe health [--url URL] [--wait S]`: a readiness check for service managers (the
// systemd units in deploy/ run it as ExecStartPost). Exit status 0 once GET URL/health
// answers 200; 1 when it does not (within S seconds with --wait, asking every 0.5 s), with
// the last answer or connection error on stderr; 2 for a bad flag.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "bench/http_client.hpp"
#include "cli/args.hpp"
#include "cli/commands.hpp"

namespace troupe::cli {

int health_command(int argc, char** argv) {
  auto a = args::parse(argc, argv, {});
  if (!a) {
    std::fprintf(stderr, "troupe health: %s\n", a.err().message.c_str());
    return 2;
  }
  auto url = a->take("--url").value_or("http://127.0.0.1:8000");
  auto wait = a->take_double("--wait", 0);
  if (auto s = a->finish(); !s || !wait) {
    std::fprintf(stderr, "troupe health: %s\nusage: troupe health [--url URL] [--wait S]\n",
                 !s ? s.err().message.c_str() : wait.err().message.c_str());
    return 2;
  }
  auto address = bench::parse_base_url(url);
  if (!address) {
    std::fprintf(stderr, "troupe health: %s\n", address.err().message.c_str());
    return 2;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(*wait);
  std::string last;
  for (;;) {
    // A fresh connection each time: a server that restarts in between is asked anew.
    bench::http_client client(*address, std::chrono::seconds(5));
    std::string body;
    auto status = client.request("GET", address->path_prefix + "/health", "", "",
                                 [&](int, std::string_view bytes) { body += bytes; });
    if (status && *status == 200) return 0;
    last = status ? std::to_string(*status) + " " + body : status.err().message;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  std::fprintf(stderr, "troupe health: %s/health is not ready: %s\n", url.c_str(), last.c_str());
  return 1;
}

}  // namespace troupe::cli
