#include "gateway/admin/admin_status_json.hpp"

#include <nlohmann/json.hpp>

namespace troupe {

using json = nlohmann::json;

std::string status_json(const cluster_status& status) {
  json components = json::array(), replicas = json::array();
  for (const auto& c : status.components)
    components.push_back({{"name", c.name},
                          {"ready", c.ready},
                          {"restarts", c.restarts},
                          {"seconds_since_progress", c.seconds_since_progress},
                          {"stuck", c.stuck}});
  for (const auto& r : status.replicas) {
    const kv_usage& kv = r.engine.kv;
    replicas.push_back({{"name", r.route.name},
                        {"weight", r.route.weight},
                        {"in_flight", r.route.in_flight},
                        {"healthy", r.route.healthy},
                        {"circuit_open", r.route.circuit_open},
                        {"state", state_name(r.route.state)},
                        {"running", r.engine.running},
                        {"waiting", r.engine.waiting},
                        {"kv_blocks_used", kv.used_blocks},
                        {"kv_blocks", kv.total_blocks}});
  }
  return json{{"components", components}, {"replicas", replicas}}.dump();
}

result<cluster_status> parse_status_json(std::string_view text) {
  json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto malformed = [](const std::string& what) { return error{"the gateway's /admin/status is malformed: " + what}; };
  if (body.is_discarded() || !body.is_object()) return malformed("not a JSON object");
  const auto components = body.find("components"), replicas = body.find("replicas");
  if (components == body.end() || !components->is_array() || replicas == body.end() || !replicas->is_array())
    return malformed("no components and replicas lists");
  cluster_status s;
  try {  // get<T> throws on a wrong type: one place turns that into an error
    for (const json& c : *components)
      s.components.push_back({c.at("name").get<std::string>(), c.at("ready").get<bool>(),
                              c.at("seconds_since_progress").get<double>(), c.at("restarts").get<uint32_t>(),
                              c.at("stuck").get<bool>()});
    for (const json& r : *replicas) {
      replica_status rs;
      auto state = replica_state_named(r.at("state").get<std::string>());
      if (!state) return malformed(state.err().message);
      rs.route = {r.at("name").get<std::string>(), r.at("weight").get<double>(),     r.at("in_flight").get<int>(),
                  r.at("healthy").get<bool>(),     r.at("circuit_open").get<bool>(), *state};
      rs.engine.running = r.at("running").get<int>();
      rs.engine.waiting = r.at("waiting").get<int>();
      rs.engine.kv.used_blocks = r.at("kv_blocks_used").get<int>();
      rs.engine.kv.total_blocks = r.at("kv_blocks").get<int>();
      s.replicas.push_back(std::move(rs));
    }
  } catch (const json::exception& e) {
    return malformed(e.what());
  }
  return s;
}

}  // namespace troupe
