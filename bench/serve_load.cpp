#include "bench/serve_load.hpp"

#include <atomic>
#include <cmath>
#include <random>
#include <thread>

#include "bench/progress_bar.hpp"

namespace troupe::bench {
namespace {

// Seconds from the start at which each request may go: exponential gaps of mean 1/rate.
std::vector<double> arrival_times(size_t n, double rate, uint64_t seed) {
  std::vector<double> at(n, 0.0);
  if (std::isinf(rate)) return at;
  std::mt19937_64 gen(seed);
  std::exponential_distribution<double> gap(rate);
  for (size_t i = 1; i < n; ++i) at[i] = at[i - 1] + gap(gen);
  return at;
}

}  // namespace

load_result run_load(const server_address& server, const request_spec& spec, const std::vector<bench_prompt>& prompts,
                     const load_options& options) {
  const size_t n = prompts.size();
  const size_t workers = options.max_concurrency > 0 ? std::min(n, size_t(options.max_concurrency)) : n;
  const std::vector<double> arrivals = arrival_times(n, options.request_rate, options.seed);
  load_result out;
  out.outcomes.resize(n);
  std::atomic<size_t> next{0};
  progress_bar progress(int(n), options.show_progress);
  const auto start = std::chrono::steady_clock::now();
  // Taking prompts in order, a request goes at its arrival time or when a worker frees up,
  // whichever is later: the semaphore of vLLM's benchmark.
  auto work = [&] {
    http_client http(server, options.read_timeout);
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      std::this_thread::sleep_until(start + std::chrono::duration<double>(arrivals[i]));
      out.outcomes[i] = send_request(http, spec, prompts[i]);
      progress.advance();
    }
  };
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w) threads.emplace_back(work);
  for (auto& t : threads) t.join();
  out.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace troupe::bench
