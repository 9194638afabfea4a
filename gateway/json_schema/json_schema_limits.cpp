#include "gateway/json_schema/json_schema_limits.hpp"

#include <string>
#include <vector>

namespace troupe {

status check_schema_size(const nlohmann::ordered_json& schema) {
  size_t properties = 0, enum_values = 0, string_bytes = 0;
  std::vector<const nlohmann::ordered_json*> todo{&schema};  // a stack: no recursion
  while (!todo.empty()) {
    const nlohmann::ordered_json& node = *todo.back();
    todo.pop_back();
    if (node.is_array()) {
      for (const auto& x : node) todo.push_back(&x);
      continue;
    }
    if (!node.is_object()) continue;
    for (const auto& [key, x] : node.items()) {
      if (key == "properties" && x.is_object()) {
        properties += x.size();
        for (const auto& [name, unused] : x.items()) string_bytes += name.size();
      } else if (key == "enum" && x.is_array()) {
        enum_values += x.size();
        for (const auto& v : x)
          if (v.is_string()) string_bytes += v.get_ref<const std::string&>().size();
      } else if (key == "const" && x.is_string()) {
        string_bytes += x.get_ref<const std::string&>().size();
      }
      todo.push_back(&x);
    }
  }
  if (properties > max_schema_properties)
    return error{"the schema has " + std::to_string(properties) + " object properties; at most " +
                 std::to_string(max_schema_properties) + " are allowed"};
  if (enum_values > max_schema_enum_values)
    return error{"the schema has " + std::to_string(enum_values) + " enum values; at most " +
                 std::to_string(max_schema_enum_values) + " are allowed"};
  if (string_bytes > max_schema_string_bytes)
    return error{"the schema's property names, enum and const strings hold " + std::to_string(string_bytes) +
                 " bytes; at most " + std::to_string(max_schema_string_bytes) + " are allowed"};
  return ok();
}

}  // namespace troupe
