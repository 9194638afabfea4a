#include "chaos/chaos_report.hpp"

#include <algorithm>
#include <cstdio>

#include "bench/serve_report.hpp"

namespace troupe::chaos {
namespace {

std::string ms(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", seconds * 1e3);
  return text;
}

std::string spread(const std::vector<double>& s, bool with_max) {
  if (s.empty()) return "-";
  std::string out = ms(bench::percentile(s, 50)) + " / " + ms(bench::percentile(s, 99));
  if (with_max) out += " / " + ms(*std::max_element(s.begin(), s.end()));
  return out;
}

}  // namespace

std::string report_markdown(const chaos_spec& spec, const run_result& run) {
  char head[512];
  std::snprintf(head, sizeof head,
                "Cluster %s; %d seeded streams at once (%d prompt tokens, %d output tokens, temperature %g) during "
                "every drill.\n\n",
                spec.cluster.string().c_str(), spec.streams, spec.prompt_tokens, spec.max_tokens, spec.temperature);
  std::string out = head;
  out +=
      "| drill | action, node | faults during the load | detect p50 / p99 (ms) | recover p50 / p99 / max (ms) | "
      "requests accepted / completed / errored / lost | outputs as without faults | TTFT p99 without / with "
      "faults (ms) | longest wait for a token without / with faults (ms) |\n"
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const drill_result& d : run.drills) {
    const std::string action = fault_name(d.drill.action) + (d.drill.node.empty() ? "" : " " + d.drill.node);
    out += "| " + d.drill.name + " | " + action + " | " + std::to_string(d.faults) + " of " +
           std::to_string(d.drill.count) + " | " + spread(d.detect_s, false) + " | " + spread(d.recover_s, true) +
           " | " + std::to_string(d.accepted) + " / " + std::to_string(d.completed) + " / " +
           std::to_string(d.errored) + " / " + std::to_string(d.lost) + " | " +
           (d.different == 0 && d.completed == d.accepted ? std::string("yes")
                                                          : "no (" + std::to_string(d.different) + " differ)") +
           " | " + ms(d.ttft_p99_clean_s) + " / " + ms(d.ttft_p99_fault_s) + " | " + ms(d.longest_gap_clean_s) + " / " +
           ms(d.longest_gap_fault_s) + " |\n";
  }
  for (const drill_result& d : run.drills)
    for (const std::string& note : d.notes) out += "\n" + d.drill.name + ": " + note + ".\n";
  out += run.violations.empty() ? "\nPassed: no stream lost, errored or changed, every recovery within " +
                                      std::to_string(spec.recovery_limit.count()) + " ms at p99.\n"
                                : "\nFailed:\n";
  for (const std::string& v : run.violations) out += "- " + v + "\n";
  return out;
}

}  // namespace troupe::chaos
