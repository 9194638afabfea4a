#pragma once
// The part of JSON Schema the grammars support, checked directly on a value: the
// reference that grammar tests hold generated JSON to.
#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace troupe::test {

// Whether v matches schema s; $refs resolve against `document`.
inline bool valid(const nlohmann::json& v, const nlohmann::json& s, const nlohmann::json& document) {
  using json = nlohmann::json;
  if (s.contains("$ref"))
    return valid(v, document.at(json::json_pointer(s["$ref"].get<std::string>().substr(1))), document);
  if (s.contains("const")) return v == s["const"];
  if (s.contains("enum")) return std::find(s["enum"].begin(), s["enum"].end(), v) != s["enum"].end();
  if (s.contains("anyOf")) {
    for (auto& alternative : s["anyOf"])
      if (valid(v, alternative, document)) return true;
    return false;
  }
  std::vector<std::string> types;
  if (s.contains("type")) {
    if (s["type"].is_string())
      types = {s["type"]};
    else
      types = s["type"].get<std::vector<std::string>>();
  }
  auto has = [&](const std::string& t) {
    return types.empty() || std::find(types.begin(), types.end(), t) != types.end();
  };
  if (v.is_string()) {
    size_t characters = 0;  // code points: UTF-8 bytes that do not continue one
    for (unsigned char c : v.get<std::string>()) characters += (c & 0xc0) != 0x80;
    if (s.contains("minLength") && characters < s["minLength"].get<size_t>()) return false;
    if (s.contains("maxLength") && characters > s["maxLength"].get<size_t>()) return false;
    return has("string");
  }
  if (v.is_boolean()) return has("boolean");
  if (v.is_null()) return has("null");
  if (v.is_number_integer() || v.is_number_unsigned()) return has("integer") || has("number");
  if (v.is_number()) return has("number");
  if (v.is_array()) {
    if (!has("array")) return false;
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return false;
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return false;
    for (auto& item : v)
      if (s.contains("items") && !valid(item, s["items"], document)) return false;
    return true;
  }
  if (!has("object")) return false;
  if (!s.contains("properties")) return true;
  for (auto& name : s.value("required", json::array()))
    if (!v.contains(name)) return false;
  for (auto& [name, member] : v.items()) {
    if (!s["properties"].contains(name) || !valid(member, s["properties"][name], document)) return false;
  }
  return true;
}

}  // namespace troupe::test
