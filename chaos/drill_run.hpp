#pragma once
// One chaos run: the cluster started (in a network of the run's own when it has nodes in
// network namespaces, chaos/partition_network), a fault-free pass of the load (what each
// stream must end with), then every drill in turn: the same load again, the drill's fault
// done to its node `count` times while it runs, each time waited for until the node is
// back and /health says so (or, for slow clients, until the gateway dropped them). A
// stream is lost when it never ended (its read timed out) or ended without finish_reason
// and [DONE]; errored when it ended with an error the client was told.
#include <filesystem>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "chaos/drills_conf.hpp"

namespace troupe::chaos {

struct drill_result {
  drill_spec drill;
  int faults = 0;                 // done while the load ran
  std::vector<double> detect_s;   // fault to /health not answering 200
  std::vector<double> recover_s;  // fault (a partition's heal) to the node running again and /health 200
  int accepted = 0, completed = 0, errored = 0, lost = 0;
  int different = 0;  // completed streams whose text is not the fault-free run's
  double ttft_p99_clean_s = 0, ttft_p99_fault_s = 0;
  double longest_gap_clean_s = 0, longest_gap_fault_s = 0;  // between two tokens of a stream
  std::vector<std::string> failures;  // what went wrong (of the streams, the first 5), for the report
  std::vector<std::string> notes;     // what else the report says of it
};

struct run_result {
  std::vector<drill_result> drills;
  std::vector<std::string> violations;  // what failed the run; empty: it passed
};

// `log`: where the cluster's output goes.
result<run_result> run_chaos(const chaos_spec& spec, const std::filesystem::path& log);

}  // namespace troupe::chaos
