#pragma once
// Reading optional fields of tokenizer.json without nlohmann's exceptions: a field that
// is missing or of another JSON type reads as the fallback.
#include <string>

#include <nlohmann/json.hpp>

namespace troupe {

inline std::string string_field(const nlohmann::json& object, const char* key, const std::string& fallback = "") {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : fallback;
}

inline bool bool_field(const nlohmann::json& object, const char* key, bool fallback) {
  const auto it = object.find(key);
  return it != object.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

}  // namespace troupe
