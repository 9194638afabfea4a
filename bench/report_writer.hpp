#pragma once
// A serve_report as people read it (vLLM's table) and as programs read it (JSON, with the
// per-request figures too).
#include <string>
#include <vector>

#include "bench/serve_report.hpp"

namespace troupe::bench {

// How the run was made, for the record.
struct run_info {
  std::string base_url, endpoint, model;
  int num_prompts = 0;
  int max_concurrency = 0;  // 0: no limit
  double request_rate = 0;  // inf: all at once
  slo_targets slo;
};

std::string format_report(const serve_report& r, const run_info& info);
std::string report_json(const serve_report& r, const run_info& info, const std::vector<request_outcome>& outcomes);

}  // namespace troupe::bench
