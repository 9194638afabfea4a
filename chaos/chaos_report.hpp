#pragma once
// A chaos run as a markdown table: a row per drill with its faults, time to detect and to
// recover, what became of the requests, whether the outputs were the fault-free run's, and
// TTFT p99 and the longest wait for a token without and with the faults; a drill's notes;
// then what failed the run, if anything. A slow-client drill's detect column is its clients' time until the gateway
// dropped them.
#include <string>

#include "chaos/drill_run.hpp"

namespace troupe::chaos {

std::string report_markdown(const chaos_spec& spec, const run_result& run);

}  // namespace troupe::chaos
