#pragma once
// JSON of /admin/replicas: GET lists every replica of cluster.conf with its state (off,
// starting, serving, draining, stopping), weight, calls in flight and the last error of
// a change; POST /admin/replicas/NAME/add {"weight": w, "ramp_s": s} (both optional: the
// file's weight, at once) starts a replica of the file that is off, and POST
// /admin/replicas/NAME/remove (no body, or {}) drains one and stops it.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "gateway/api_error.hpp"
#include "gateway/replica_router.hpp"

namespace troupe {

struct replica_change {
  std::string name;
  bool add = false;  // else remove
  std::optional<double> weight;
  std::chrono::milliseconds ramp{0};
};
// `path` is what follows "/admin/replicas/".
result<replica_change, api_error> parse_replica_change(std::string_view path, std::string_view body);
// The body of an add (empty when it gives neither), for `troupe cluster add`.
std::string replica_add_body(std::optional<double> weight, std::optional<double> ramp_s);

struct replica_listing {
  std::string name;
  replica_state state;
  double weight;
  int in_flight;
  std::string last_error;  // of its last add or remove, empty when it went well
};
std::string replicas_json(const std::vector<replica_listing>& replicas);
// The other end, for `troupe cluster add` and `remove`.
result<std::vector<replica_listing>> parse_replicas_json(std::string_view text);

}  // namespace troupe
