// UCX between two processes on this host (this one and tests/transport's echo peer): the
// round-trip time of a small message (median and 99th percentile) and of 8 MiB, and the
// bandwidth that 8 MiB each way gives. UCX_TLS and friends apply as in ucx_transport.hpp.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "tests/transport/echo_peer.hpp"

using namespace troupe;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto patience = std::chrono::seconds(30);

// Round-trip times in microseconds, sorted, after `warmup` untimed ones.
result<std::vector<double>> round_trips(test::echo_peer& p, size_t bytes, int count, int warmup) {
  const std::vector<uint8_t> data(bytes, 7);
  std::vector<double> times;
  for (int i = 0; i < warmup + count; ++i) {
    const auto start = clock_type::now();
    auto back = p.echo(uint64_t(i), data, patience);
    if (!back) return back.err();
    if (i >= warmup) times.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times;
}

double at(const std::vector<double>& sorted, double quantile) {
  return sorted[size_t(quantile * double(sorted.size() - 1))];
}

}  // namespace

int main() {
  auto started = test::start_echo_peer(UCX_ECHO_PEER, patience);
  if (!started) return std::fprintf(stderr, "bench_transport: %s\n", started.err().message.c_str()), 1;
  auto& p = *started;
  auto small = round_trips(p, 8, 2000, 200);
  auto large = round_trips(p, size_t{8} << 20, 30, 3);
  for (auto* r : {&small, &large})
    if (!*r) return std::fprintf(stderr, "bench_transport: %s\n", r->err().message.c_str()), 1;
  std::printf("8 B round trip: median %.1f us, p99 %.1f us\n", at(*small, 0.5), at(*small, 0.99));
  const double rtt = at(*large, 0.5);
  std::printf("8 MiB round trip: median %.2f ms, %.0f MB/s (8 MiB each way)\n", rtt / 1000,
              2.0 * double(size_t{8} << 20) / rtt);
  return p.self->send(p.peer, test::echo_quit_tag, nullptr, 0, patience) ? 0 : 1;
}
