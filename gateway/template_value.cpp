#include "gateway/template_value.hpp"

namespace troupe {

jinja::value to_template_value(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return jinja::value(nullptr);
    case nlohmann::json::value_t::boolean:
      return jinja::value(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return jinja::value(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_float:
      return jinja::value(j.get<double>());
    case nlohmann::json::value_t::string:
      return jinja::value(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      jinja::array items;
      for (const auto& item : j) items.push_back(to_template_value(item));
      return jinja::value(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      jinja::object o;
      for (const auto& [key, item] : j.items()) o.set(key, to_template_value(item));
      return jinja::value(std::move(o));
    }
    default:
      return jinja::value();
  }
}

}  // namespace troupe
