#include "gateway/admin/admin_replicas_json.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "gateway/json_body.hpp"

namespace troupe {

using json = nlohmann::ordered_json;

result<replica_change, api_error> parse_replica_change(std::string_view path, std::string_view text) {
  replica_change c;
  const size_t slash = path.find('/');
  const std::string_view action = slash == std::string_view::npos ? "" : path.substr(slash + 1);
  if (slash == 0 || (action != "add" && action != "remove"))
    return no_endpoint("/admin/replicas/" + std::string(path), "/admin/replicas/NAME/add or /remove");
  c.name = std::string(path.substr(0, slash));
  c.add = action == "add";
  if (text.empty()) return c;
  auto parsed = parse_json_object(text);
  if (!parsed) return parsed.err();
  const json& body = *parsed;
  for (const auto& [key, value] : body.items()) {
    if (!c.add) return bad_param(key, "unknown field " + key + " (a remove takes none)");
    if (key == "weight") {
      if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0)
        return bad_param("weight", "weight must be a number 0 or more");
      c.weight = value.get<double>();
    } else if (key == "ramp_s") {
      if (!value.is_number() || !(value.get<double>() >= 0) || value.get<double>() > 86400)
        return bad_param("ramp_s", "ramp_s must be a number of seconds from 0 to 86400");
      c.ramp = std::chrono::milliseconds(std::llround(value.get<double>() * 1000));
    } else {
      return bad_param(key, "unknown field " + key + " (weight, ramp_s)");
    }
  }
  return c;
}

std::string replica_add_body(std::optional<double> weight, std::optional<double> ramp_s) {
  json body = json::object();
  if (weight) body["weight"] = *weight;
  if (ramp_s) body["ramp_s"] = *ramp_s;
  return body.empty() ? "" : body.dump();
}

std::string replicas_json(const std::vector<replica_listing>& replicas) {
  json list = json::array();
  for (const auto& r : replicas)
    list.push_back({{"name", r.name},
                    {"state", state_name(r.state)},
                    {"weight", r.weight},
                    {"in_flight", r.in_flight},
                    {"last_error", r.last_error}});
  return json{{"replicas", list}}.dump();
}

result<std::vector<replica_listing>> parse_replicas_json(std::string_view text) {
  json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto malformed = [](const std::string& what) { return error{"the gateway's /admin/replicas is malformed: " + what}; };
  if (body.is_discarded() || !body.is_object() || !body.contains("replicas") || !body["replicas"].is_array())
    return malformed("no replicas list");
  std::vector<replica_listing> out;
  try {  // get<T> throws on a wrong type: one place turns that into an error
    for (const json& r : body["replicas"]) {
      auto state = replica_state_named(r.at("state").get<std::string>());
      if (!state) return malformed(state.err().message);
      out.push_back({r.at("name").get<std::string>(), *state, r.at("weight").get<double>(),
                     r.at("in_flight").get<int>(), r.at("last_error").get<std::string>()});
    }
  } catch (const json::exception& e) {
    return malformed(e.what());
  }
  return out;
}

}  // namespace troupe
