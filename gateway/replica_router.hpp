#pragma once
// Which replica of the model a request goes to, when a cluster runs several (data
// parallelism). Each replica has a weight, its share of new traffic (0: drained, its
// requests in flight finish). Policies:
//   round_robin   smooth weighted round robin: exact shares, evenly interleaved;
//   least_load    the fewest requests in flight per unit of weight;
//   prefix_aware  weighted rendezvous hashing of the prompt's first tokens, so prompts that
//                 share a prefix meet that prefix in one replica's prefix cache.
// A request with a session key (the `user` field or the x-session-id header) always takes
// weighted rendezvous hashing of that key: the same session keeps its replica, and a
// weight change moves only the sessions it must. A replica is skipped while its circuit is
// open (consecutive failed requests; closed again after a cool-down by one request that
// succeeds), and while it is not healthy (a component down) unless no healthy one is left:
// then its scheduler queues the request until the component is back, or fails it.
// Weights can move gradually: a new set of weights with a ramp is reached linearly over it.
// Replicas come and go at runtime, each in one slot of the file's list: off (not running:
// no traffic, left out of view()) -> starting -> serving -> draining (weight 0, its calls
// in flight finish) -> stopping -> off.
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace troupe {

enum class routing_policy { round_robin, least_load, prefix_aware };
enum class replica_state { off, starting, serving, draining, stopping };

result<routing_policy> routing_policy_named(std::string_view name);
std::string_view state_name(replica_state s);
result<replica_state> replica_state_named(std::string_view name);

struct circuit_options {
  int failures_to_open = 5;                    // consecutive failed requests
  std::chrono::milliseconds cool_down{10000};  // before one trial request is let through
};

class replica_router {
 public:
  using clock = std::chrono::steady_clock;

  replica_router(std::vector<std::string> names, std::vector<double> weights, routing_policy policy,
                 circuit_options circuit = {});

  size_t size() const { return replicas_.size(); }
  const std::string& name(size_t r) const { return replicas_[r].name; }
  std::optional<size_t> index_of(std::string_view name) const;
  replica_state state(size_t r) const { return replicas_[r].state; }
  int in_flight(size_t r) const { return replicas_[r].in_flight; }

  // The replica for a new request, counted in flight until finished(); none while no
  // replica can take it (every one drained or with an open circuit).
  std::optional<size_t> pick(std::string_view session, const std::vector<int>& prompt, clock::time_point now);
  // A picked request ended; `failed` when it ended with an engine error.
  void finished(size_t r, bool failed, clock::time_point now);

  void set_healthy(size_t r, bool healthy) { replicas_[r].healthy = healthy; }
  // New weights by replica name (the others keep theirs), reached linearly over `ramp`
  // (zero: at once). An unknown name, one not serving, a negative weight or all serving
  // weights 0: an error, and nothing changes.
  status set_weights(const std::map<std::string, double>& weights, std::chrono::milliseconds ramp,
                     clock::time_point now);

  // An off replica starts: an error, and nothing changes, unless it is off.
  status begin_add(size_t r);
  // A starting replica is ready: it serves, its weight rising from 0 over `ramp`.
  void added(size_t r, double weight, std::chrono::milliseconds ramp, clock::time_point now);
  // A serving replica takes no new request from now on (weight 0 at once); an error, and
  // nothing changes, unless it serves and another serving replica keeps a weight above 0.
  status begin_remove(size_t r, clock::time_point now);
  // Draining with nothing in flight: it may be stopped.
  bool drained(size_t r) const { return replicas_[r].state == replica_state::draining && replicas_[r].in_flight == 0; }
  // Moves replica r to `s` unchecked (stopping once drained; off once stopped, or when its
  // start failed); off forgets its load and circuit.
  void mark(size_t r, replica_state s);

  struct replica_view {
    std::string name;
    double weight;  // now, within a ramp
    int in_flight;
    bool healthy, circuit_open;
    replica_state state;
  };
  std::vector<replica_view> view(clock::time_point now) const;

 private:
  struct replica {
    std::string name;
    replica_state state = replica_state::serving;
    double from = 1, to = 1;  // weight ramping from -> to over [ramp_start, ramp_end]
    clock::time_point ramp_start{}, ramp_end{};
    int in_flight = 0;
    bool healthy = true;
    int consecutive_failures = 0;
    clock::time_point open_until{};  // circuit open while now < open_until
    bool trial = false;              // half-open: one request let through, not finished yet
    double current = 0;              // smooth round robin's running score
  };
  double weight(const replica& r, clock::time_point now) const;
  bool routable(const replica& r, clock::time_point now) const;
  std::optional<size_t> choose(std::string_view session, const std::vector<int>& prompt, clock::time_point now);
  std::optional<size_t> rendezvous(uint64_t key, clock::time_point now) const;

  std::vector<replica> replicas_;
  routing_policy policy_;
  circuit_options circuit_;
  bool unhealthy_allowed_ = false;  // while choose() looks past health: no healthy replica is routable
  // Which replicas round robin last chose among: when that changes, every score starts at
  // 0 again, or those left behind by one that went would skew the shares from then on.
  std::vector<bool> round_robin_members_;
};

}  // namespace troupe
