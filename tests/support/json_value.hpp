#pragma once
// nlohmann::json to jinja::value, for tests (the engine itself takes no JSON): objects
// keep their key order, integers stay integers, floats stay floats.
#include <nlohmann/json.hpp>

#include "model/jinja/value.hpp"

namespace troupe::test {

inline jinja::value to_value(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return jinja::value(nullptr);
    case nlohmann::json::value_t::boolean: return jinja::value(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return jinja::value(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: return jinja::value(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_float: return jinja::value(j.get<double>());
    case nlohmann::json::value_t::string: return jinja::value(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      jinja::array items;
      for (const auto& item : j) items.push_back(to_value(item));
      return jinja::value(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      jinja::object o;
      for (const auto& [key, item] : j.items()) o.set(key, to_value(item));
      return jinja::value(std::move(o));
    }
    default: return jinja::value();
  }
}

}  // namespace troupe::test
