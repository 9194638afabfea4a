#pragma once
// The figures of a serving benchmark, as vLLM's `bench serve` reports them: throughput over
// the whole run, and latency statistics over the successful requests.
#include <optional>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "bench/serve_client.hpp"

namespace troupe::bench {

// Service-level objectives in milliseconds; a request is good when it meets every one given.
struct slo_targets {
  std::optional<double> ttft_ms, tpot_ms, e2el_ms;
  bool any() const { return ttft_ms || tpot_ms || e2el_ms; }
};

// "ttft:100 tpot:50 e2el:2000" (spaces or commas between, any subset).
result<slo_targets> parse_slo_targets(std::string_view spec);

struct latency_stats {
  double mean_ms = 0, median_ms = 0, std_ms = 0, p99_ms = 0;
};

// numpy's percentile (linear interpolation) of values in any order; 0 for none.
double percentile(std::vector<double> values, double p);
latency_stats stats_of_seconds(const std::vector<double>& seconds);

struct serve_report {
  int completed = 0, failed = 0;
  double duration_s = 0;
  long long total_input_tokens = 0, total_output_tokens = 0;  // of the completed requests
  double request_throughput = 0, output_throughput = 0, total_token_throughput = 0;
  std::optional<double> request_goodput;  // when targets were given
  latency_stats ttft, tpot, itl, e2el;
};

// TPOT of one request: the time after its first token over the tokens after it.
std::optional<double> tpot_seconds(const request_outcome& r);

serve_report summarize(const std::vector<request_outcome>& outcomes, double duration_s, const slo_targets& slo);

}  // namespace troupe::bench
