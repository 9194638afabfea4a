#include "gateway/tool_parameter_type.hpp"

namespace troupe {

std::string declared_parameter_type(const nlohmann::ordered_json& schema) {
  if (!schema.is_object() || !schema.contains("type")) return {};
  const auto& type = schema["type"];
  if (type.is_string()) return type.get<std::string>();
  if (type.is_array())
    for (const auto& t : type)
      if (t.is_string() && t.get<std::string>() != "null") return t.get<std::string>();
  return {};
}

}  // namespace troupe
