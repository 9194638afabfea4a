#include "gateway/admin/admin_traffic_json.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "gateway/json_body.hpp"

namespace troupe {

using json = nlohmann::ordered_json;

result<traffic_request, api_error> parse_traffic_request(std::string_view text) {
  auto parsed = parse_json_object(text);
  if (!parsed) return parsed.err();
  const json& body = *parsed;
  traffic_request r;
  auto weights = body.find("weights");
  if (weights == body.end() || !weights->is_object() || weights->empty())
    return bad_param("weights", "weights must be an object of replica names to numbers");
  for (const auto& [name, w] : weights->items()) {
    if (!w.is_number() || !std::isfinite(w.get<double>()) || w.get<double>() < 0)
      return bad_param("weights", "the weight of " + name + " must be a number 0 or more");
    r.weights[name] = w.get<double>();
  }
  if (auto ramp = body.find("ramp_s"); ramp != body.end()) {
    if (!ramp->is_number() || !(ramp->get<double>() >= 0) || ramp->get<double>() > 86400)
      return bad_param("ramp_s", "ramp_s must be a number of seconds from 0 to 86400");
    r.ramp = std::chrono::milliseconds(std::llround(ramp->get<double>() * 1000));
  }
  for (const auto& [key, value] : body.items())
    if (key != "weights" && key != "ramp_s") return bad_param(key, "unknown field " + key + " (weights, ramp_s)");
  return r;
}

std::string traffic_json(const std::vector<replica_router::replica_view>& replicas) {
  json list = json::array();
  for (const auto& r : replicas)
    list.push_back({{"name", r.name},
                    {"weight", r.weight},
                    {"in_flight", r.in_flight},
                    {"healthy", r.healthy},
                    {"circuit_open", r.circuit_open},
                    {"state", state_name(r.state)}});
  return json{{"replicas", list}}.dump();
}

}  // namespace troupe
