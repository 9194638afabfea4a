#pragma once
// chaos/drills.conf in native types: the cluster a chaos run starts, the load it keeps on
// it, and its drills, each a fault done `count` times while that load runs to a node's
// process: `kill` (SIGKILL: it dies, and `troupe cluster up` starts it again), `stop`
// (SIGSTOP: it hangs, alive, until the head, missing its heartbeats for the connection
// timeout, kills it and starts it again) or `hang` (the hang drill's signal: the node's
// stages block their next step for `hang_ms` while the process stays alive, until the
// health monitor declares them stuck; the head then restarts a node's process, or
// replaces its own stages), `partition` (the node, in a network namespace of its own, is
// cut off from the rest for `duration_ms`, then reconnected), `congest` (the same node's
// link throttled to `rate_kbit` with a queue of `queue_ms` for `duration_ms`: what it sends
// and receives waits in the queue, and what overflows it is dropped), `lossy` (the same
// node's packets dropped at random, `loss_percent` of them each way, for `duration_ms`),
// `delay` (each of the same node's packets held `delay_ms` +- `jitter_ms`, drawn at random,
// each way, for `duration_ms`), `garbage` (`connections` connections to each TCP port the
// node's process listens on, its control port and UCX's, each sending random bytes, a
// frame header announcing 4 GiB or nothing: the process must stay up); or,
// with no node, `slow_client`: `count` extra clients read their streams a byte a second
// while the load runs, until the gateway drops them. Every error names the file and line.
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace troupe::chaos {

enum class fault { kill, stop, hang, partition, congest, lossy, delay, garbage, slow_client };

// The name a drills file gives the fault.
const char* fault_name(fault f);

struct drill_spec {
  std::string name;  // [drill.NAME]
  fault action = fault::kill;
  std::string node;                          // the node whose process it hits; none for slow_client
  int count = 1;                             // faults, one after the other; slow_client: clients, at once
  std::chrono::milliseconds interval{300};   // after a recovery, before the next fault
  std::chrono::milliseconds hang{30000};     // hang: how long the stages block
  std::chrono::milliseconds duration{3000};  // partition, congest, lossy, delay: how long the link is hit
  int rate_kbit = 512;                       // congest: the link's rate
  std::chrono::milliseconds queue{100};      // congest: the most a packet waits before it is dropped
  int loss_percent = 10;                     // lossy: the packets dropped at random, each way
  std::chrono::milliseconds delay{100};      // delay: how long a packet is held, on average
  std::chrono::milliseconds jitter{0};       // delay: the most it is held more or less than that
  int connections = 1000;                    // garbage: connections to each port, per fault
  int line = 0;
};

struct chaos_spec {
  std::filesystem::path file;
  std::filesystem::path cluster;  // the cluster.conf the run starts with `troupe cluster up`
  int streams = 64;               // seeded streams in flight at once
  int prompt_tokens = 32;
  int max_tokens = 256;
  double temperature = 0.7;
  std::chrono::milliseconds recovery_limit{5000};  // a slower p99 recovery fails the run
  std::vector<drill_spec> drills;                  // file order
};

result<chaos_spec> read_chaos_spec(const std::filesystem::path& file);

}  // namespace troupe::chaos
