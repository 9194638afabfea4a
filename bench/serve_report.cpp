#include "bench/serve_report.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>

namespace troupe::bench {

result<slo_targets> parse_slo_targets(std::string_view spec) {
  slo_targets t;
  size_t start = 0;
  while (start < spec.size()) {
    size_t end = spec.find_first_of(" ,", start);
    if (end == std::string_view::npos) end = spec.size();
    const std::string_view item = spec.substr(start, end - start);
    start = end + 1;
    if (item.empty()) continue;
    const std::string shown = "--goodput \"" + std::string(item) + "\"";
    const size_t colon = item.find(':');
    if (colon == std::string_view::npos) return error{shown + ": expected NAME:MS (ttft, tpot or e2el)"};
    const std::string_view name = item.substr(0, colon), number = item.substr(colon + 1);
    double ms = 0;
    auto [p, ec] = std::from_chars(number.data(), number.data() + number.size(), ms);
    if (ec != std::errc() || p != number.data() + number.size() || !(ms > 0) || std::isinf(ms))
      return error{shown + ": the target must be a positive number of milliseconds"};
    if (name == "ttft")
      t.ttft_ms = ms;
    else if (name == "tpot")
      t.tpot_ms = ms;
    else if (name == "e2el")
      t.e2el_ms = ms;
    else
      return error{shown + ": unknown metric (ttft, tpot or e2el)"};
  }
  if (!t.any()) return error{"--goodput needs at least one NAME:MS target"};
  return t;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double pos = p / 100 * double(values.size() - 1);
  const size_t lo = size_t(std::floor(pos)), hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (pos - double(lo));
}

latency_stats stats_of_seconds(const std::vector<double>& seconds) {
  latency_stats s;
  if (seconds.empty()) return s;
  const double n = double(seconds.size());
  const double mean = std::accumulate(seconds.begin(), seconds.end(), 0.0) / n;
  double var = 0;
  for (double v : seconds) var += (v - mean) * (v - mean);
  s.mean_ms = mean * 1000;
  s.std_ms = std::sqrt(var / n) * 1000;
  s.median_ms = percentile(seconds, 50) * 1000;
  s.p99_ms = percentile(seconds, 99) * 1000;
  return s;
}

std::optional<double> tpot_seconds(const request_outcome& r) {
  if (r.output_tokens < 2) return std::nullopt;
  return (r.e2e_s - r.ttft_s) / (r.output_tokens - 1);
}

serve_report summarize(const std::vector<request_outcome>& outcomes, double duration_s, const slo_targets& slo) {
  serve_report r;
  r.duration_s = duration_s;
  std::vector<double> ttfts, tpots, itls, e2els;
  int good = 0;
  for (const auto& o : outcomes) {
    if (!o.success) {
      ++r.failed;
      continue;
    }
    ++r.completed;
    r.total_input_tokens += o.prompt_tokens;
    r.total_output_tokens += o.output_tokens;
    ttfts.push_back(o.ttft_s);
    e2els.push_back(o.e2e_s);
    itls.insert(itls.end(), o.itl_s.begin(), o.itl_s.end());
    const auto tpot = tpot_seconds(o);
    if (tpot) tpots.push_back(*tpot);
    // A request of one token has no TPOT to miss.
    good += (!slo.ttft_ms || o.ttft_s * 1000 <= *slo.ttft_ms) &&
            (!slo.tpot_ms || tpot.value_or(0) * 1000 <= *slo.tpot_ms) &&
            (!slo.e2el_ms || o.e2e_s * 1000 <= *slo.e2el_ms);
  }
  if (duration_s > 0) {
    r.request_throughput = r.completed / duration_s;
    r.output_throughput = double(r.total_output_tokens) / duration_s;
    r.total_token_throughput = double(r.total_input_tokens + r.total_output_tokens) / duration_s;
    if (slo.any()) r.request_goodput = good / duration_s;
  }
  r.ttft = stats_of_seconds(ttfts);
  r.tpot = stats_of_seconds(tpots);
  r.itl = stats_of_seconds(itls);
  r.e2el = stats_of_seconds(e2els);
  return r;
}

}  // namespace troupe::bench
