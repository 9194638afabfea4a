#include "gateway/json_body.hpp"

#include <limits>
#include <string>

namespace troupe {

using json = nlohmann::ordered_json;

result<json, api_error> parse_json_object(std::string_view body) {
  bool too_deep = false;
  // nlohmann's parser keeps its own stack, so a deep document costs no recursion here;
  // the subtree of a refused container is not built.
  json::parser_callback_t refuse_deep = [&](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= max_json_depth)
      too_deep = true;
    return !too_deep;
  };
  json j = json::parse(body, refuse_deep, /*allow_exceptions=*/false);
  if (too_deep)
    return bad_request("the request body nests more than " + std::to_string(max_json_depth) + " levels deep");
  if (j.is_discarded()) return bad_request("the request body is not valid JSON");
  if (!j.is_object()) return bad_request("the request body must be a JSON object");
  return j;
}

std::optional<int64_t> exact_integer(const json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > uint64_t(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return int64_t(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  return std::nullopt;
}

result<std::vector<int>, api_error> token_ids(const json& v, const std::string& param) {
  if (!v.is_array()) return bad_param(param, param + " must be a list of token ids");
  std::vector<int> ids;
  ids.reserve(v.size());
  for (const json& id : v) {
    const auto i = exact_integer(id);
    if (!i) return bad_param(param, param + " must be a list of integer token ids");
    if (*i < 0 || *i > std::numeric_limits<int>::max())
      return bad_param(param, "token id " + std::to_string(*i) + " is outside the vocabulary");
    ids.push_back(int(*i));
  }
  return ids;
}

std::optional<api_error> check_count(size_t count, size_t limit, const std::string& param, const char* what) {
  if (count <= limit) return std::nullopt;
  return bad_param(param, param + " has " + std::to_string(count) + " " + what + "; at most " + std::to_string(limit) +
                              " are taken");
}

std::string string_field(const nlohmann::ordered_json& object, const char* key, const std::string& fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

bool bool_field(const nlohmann::ordered_json& object, const char* key, bool fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  return it != object.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

}  // namespace troupe
