#pragma once
// JSON of /admin/traffic: POST {"weights": {"replica": w, ...}, "ramp_s": s} moves the
// replicas' shares of new traffic (over s seconds; 0 or absent: at once); GET and the
// POST's answer list every replica that is not off with its weight, requests in flight,
// health, circuit and state.
#include <chrono>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "gateway/api_error.hpp"
#include "gateway/replica_router.hpp"

namespace troupe {

struct traffic_request {
  std::map<std::string, double> weights;
  std::chrono::milliseconds ramp{0};
};
result<traffic_request, api_error> parse_traffic_request(std::string_view body);
std::string traffic_json(const std::vector<replica_router::replica_view>& replicas);

}  // namespace troupe
