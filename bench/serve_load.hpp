#pragma once
// Sends the prompts as vLLM's serving benchmark does: arrivals are a Poisson process of the
// request rate (all at once when it is infinite), and at most max_concurrency requests are
// in flight, each worker thread on its own keep-alive connection.
#include <chrono>
#include <cstdint>
#include <limits>
#include <vector>

#include "bench/serve_client.hpp"

namespace troupe::bench {

struct load_options {
  int max_concurrency = 0;                                        // 0: no limit (a connection per prompt)
  double request_rate = std::numeric_limits<double>::infinity();  // requests per second
  uint64_t seed = 0;
  std::chrono::milliseconds read_timeout{std::chrono::minutes(5)};
  bool show_progress = true;
};

struct load_result {
  std::vector<request_outcome> outcomes;  // in the order of the prompts
  double duration_s = 0;                  // from the first send to the last answer
};

load_result run_load(const server_address& server, const request_spec& spec, const std::vector<bench_prompt>& prompts,
                     const load_options& options);

}  // namespace troupe::bench
