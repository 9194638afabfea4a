#include "bench/report_writer.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

namespace troupe::bench {
namespace {

using json = nlohmann::ordered_json;

std::string line(const char* label, const std::string& value) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%-40s %s\n", label, value.c_str());
  return buf;
}
std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}
std::string heading(const std::string& title, char fill) {
  const size_t width = 50, side = (width - title.size()) / 2;
  return std::string(side, fill) + title + std::string(width - side - title.size(), fill) + "\n";
}

struct metric {
  const char* key;    // ttft, tpot, itl, e2el
  const char* label;  // TTFT, TPOT, ITL, E2EL
  const char* title;
  const latency_stats* stats;
};

std::vector<metric> metrics_of(const serve_report& r) {
  return {{"ttft", "TTFT", "Time to First Token", &r.ttft},
          {"tpot", "TPOT", "Time per Output Token (excl. 1st token)", &r.tpot},
          {"itl", "ITL", "Inter-token Latency", &r.itl},
          {"e2el", "E2EL", "End-to-end Latency", &r.e2el}};
}

}  // namespace

std::string format_report(const serve_report& r, const run_info& info) {
  std::string out = heading(" Serving Benchmark Result ", '=');
  out += line("Successful requests:", std::to_string(r.completed));
  out += line("Failed requests:", std::to_string(r.failed));
  if (info.max_concurrency > 0) out += line("Maximum request concurrency:", std::to_string(info.max_concurrency));
  out += line("Request rate configured (RPS):", std::isinf(info.request_rate) ? "inf" : number(info.request_rate));
  out += line("Benchmark duration (s):", number(r.duration_s));
  out += line("Total input tokens:", std::to_string(r.total_input_tokens));
  out += line("Total generated tokens:", std::to_string(r.total_output_tokens));
  out += line("Request throughput (req/s):", number(r.request_throughput));
  if (r.request_goodput) out += line("Request goodput (req/s):", number(*r.request_goodput));
  out += line("Output token throughput (tok/s):", number(r.output_throughput));
  out += line("Total token throughput (tok/s):", number(r.total_token_throughput));
  for (const metric& m : metrics_of(r)) {
    out += heading(m.title, '-');
    const std::string l = m.label;
    out += line(("Mean " + l + " (ms):").c_str(), number(m.stats->mean_ms));
    out += line(("Median " + l + " (ms):").c_str(), number(m.stats->median_ms));
    out += line(("P99 " + l + " (ms):").c_str(), number(m.stats->p99_ms));
  }
  return out + std::string(50, '=') + "\n";
}

std::string report_json(const serve_report& r, const run_info& info, const std::vector<request_outcome>& outcomes) {
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y%m%d-%H%M%S", std::localtime(&now));
  json j{{"date", date},
         {"base_url", info.base_url},
         {"endpoint", info.endpoint},
         {"model_id", info.model},
         {"num_prompts", info.num_prompts},
         {"request_rate", std::isinf(info.request_rate) ? json("inf") : json(info.request_rate)},
         {"max_concurrency", info.max_concurrency > 0 ? json(info.max_concurrency) : json(nullptr)},
         {"duration", r.duration_s},
         {"completed", r.completed},
         {"failed", r.failed},
         {"total_input_tokens", r.total_input_tokens},
         {"total_output_tokens", r.total_output_tokens},
         {"request_throughput", r.request_throughput},
         {"request_goodput", r.request_goodput ? json(*r.request_goodput) : json(nullptr)},
         {"output_throughput", r.output_throughput},
         {"total_token_throughput", r.total_token_throughput}};
  json targets = json::object();
  if (info.slo.ttft_ms) targets["ttft"] = *info.slo.ttft_ms;
  if (info.slo.tpot_ms) targets["tpot"] = *info.slo.tpot_ms;
  if (info.slo.e2el_ms) targets["e2el"] = *info.slo.e2el_ms;
  j["goodput_targets_ms"] = targets;
  for (const metric& m : metrics_of(r)) {
    const std::string k = m.key;
    j["mean_" + k + "_ms"] = m.stats->mean_ms;
    j["median_" + k + "_ms"] = m.stats->median_ms;
    j["std_" + k + "_ms"] = m.stats->std_ms;
    j["p99_" + k + "_ms"] = m.stats->p99_ms;
  }
  json input_lens = json::array(), output_lens = json::array(), ttfts = json::array(), itls = json::array(),
       e2els = json::array(), errors = json::array();
  for (const auto& o : outcomes) {
    input_lens.push_back(o.prompt_tokens);
    output_lens.push_back(o.output_tokens);
    ttfts.push_back(o.ttft_s);
    itls.push_back(o.itl_s);
    e2els.push_back(o.e2e_s);
    errors.push_back(o.error);
  }
  j["input_lens"] = input_lens;
  j["output_lens"] = output_lens;
  j["ttfts"] = ttfts;
  j["itls"] = itls;
  j["e2els"] = e2els;
  j["errors"] = errors;
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace troupe::bench
