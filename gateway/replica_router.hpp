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
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace troupe {

enum class routing_policy { round_robin, least_load, prefix_aware };

result<routing_policy> routing_policy_named(std::string_view name);

struct circuit_options {
  int failures_to_open = 5;             // consecutive failed requests
  std::chrono::milliseconds cool_down{10000};  // before one trial request is let through
};

class replica_router {
 public:
  using clock = std::chrono::steady_clock;

  replica_router(std::vector<std::string> names, std::vector<double> weights, routing_policy policy,
                 circuit_options circuit = {});

  size_t size() const { return replicas_.size(); }
  const std::string& name(size_t r) const { return replicas_[r].name; }

  // The replica for a new request, counted in flight until finished(); none while no
  // replica can take it (every one drained or with an open circuit).
  std::optional<size_t> pick(std::string_view session, const std::vector<int>& prompt, clock::time_point now);
  // A picked request ended; `failed` when it ended with an engine error.
  void finished(size_t r, bool failed, clock::time_point now);

  void set_healthy(size_t r, bool healthy) { replicas_[r].healthy = healthy; }
  // New weights by replica name (the others keep theirs), reached linearly over `ramp`
  // (zero: at once). An unknown name, a negative weight or all weights 0: an error, and
  // nothing changes.
  status set_weights(const std::map<std::string, double>& weights, std::chrono::milliseconds ramp,
                     clock::time_point now);

  struct replica_view {
    std::string name;
    double weight;  // now, within a ramp
    int in_flight;
    bool healthy, circuit_open;
  };
  std::vector<replica_view> view(clock::time_point now) const;

 private:
  struct replica {
    std::string name;
    double from = 1, to = 1;  // weight ramping from -> to over [ramp_start, ramp_end]
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
  clock::time_point ramp_start_{}, ramp_end_{};
  bool unhealthy_allowed_ = false;  // while choose() looks past health: no healthy replica is routable
};

}  // namespace troupe
