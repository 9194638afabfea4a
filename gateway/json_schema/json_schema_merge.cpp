#include "gateway/json_schema/json_schema_merge.hpp"

#include <algorithm>
#include <set>
#include <vector>

#include "gateway/json_schema/json_pointer.hpp"
#include "gateway/json_schema/json_schema_rules.hpp"

namespace troupe {

using json = nlohmann::ordered_json;

namespace {

constexpr int max_merge_depth = 32;

const std::set<std::string> lower_bounds = {"minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"};
const std::set<std::string> upper_bounds = {"maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"};

std::vector<std::string> type_names(const json& type) {
  if (type.is_string()) return {type.get<std::string>()};
  std::vector<std::string> names;
  if (type.is_array()) {
    for (auto& t : type) {
      if (t.is_string()) names.push_back(t.get<std::string>());
    }
  }
  return names;
}

class merger {
 public:
  merger(const json& document, int depth) : document_(document), depth_(depth) {}

  json run(const json& schema, const std::string& where) {
    if (depth_ > max_merge_depth) fail_schema(where, "allOf and $ref nested more than 32 deep");
    json own = schema;
    own.erase("allOf");
    const json& parts = schema["allOf"];
    if (!parts.is_array() || parts.empty()) fail_schema(where + "/allOf", "allOf that is not a non-empty array");
    json merged = json::object();
    add(merged, expanded(own, where), where);
    for (size_t i = 0; i < parts.size(); ++i)
      add(merged, expanded(parts[i], where + "/allOf/" + std::to_string(i)), where);
    close(merged, where);
    return merged;
  }

 private:
  // The part as a plain schema: its $ref resolved and its own allOf merged.
  json expanded(const json& part, const std::string& where) {
    if (part.is_boolean()) {
      if (!part.get<bool>()) fail_schema(where, "a schema that allows nothing (false)");
      return json::object();
    }
    if (!part.is_object()) fail_schema(where, "a schema that is not an object");
    json p = part;
    if (p.contains("$ref")) {
      const json& ref = p["$ref"];
      const json* target = ref.is_string() ? resolve_reference(document_, ref.get<std::string>()) : nullptr;
      if (!target) fail_schema(where + "/$ref", "a $ref that names no #/$defs/ entry");
      p.erase("$ref");
      p["allOf"] = json::array({*target});
    }
    if (p.contains("allOf")) return merger(document_, depth_ + 1).run(p, where);
    return p;
  }

  void add(json& merged, const json& part, const std::string& where) {
    if (part.value("additionalProperties", json(true)) == json(false)) {
      std::set<std::string> names;
      const json properties = part.value("properties", json::object());
      for (auto& [name, unused] : properties.items()) names.insert(name);
      if (!closed_)
        allowed_ = names;
      else
        std::erase_if(allowed_, [&](const std::string& n) { return !names.contains(n); });
      closed_ = true;
    }
    for (auto& [key, value] : part.items()) {
      if (!merged.contains(key)) {
        merged[key] = value;
        continue;
      }
      json& have = merged[key];
      if (have == value) continue;
      if (key == "properties" && have.is_object() && value.is_object()) {
        for (auto& [name, schema] : value.items()) {
          if (!have.contains(name))
            have[name] = schema;
          else if (have[name] != schema)
            have[name] = json{{"allOf", json::array({have[name], schema})}};
        }
      } else if (key == "required" && have.is_array() && value.is_array()) {
        for (auto& name : value) {
          if (std::find(have.begin(), have.end(), name) == have.end()) have.push_back(name);
        }
      } else if (key == "type") {
        auto mine = type_names(have), theirs = type_names(value);
        json both = json::array();
        for (auto& t : mine) {
          if (std::find(theirs.begin(), theirs.end(), t) != theirs.end() ||
              (t == "integer" && std::find(theirs.begin(), theirs.end(), "number") != theirs.end()))
            both.push_back(t);
          else if (t == "number" && std::find(theirs.begin(), theirs.end(), "integer") != theirs.end())
            both.push_back("integer");
        }
        if (both.empty()) fail_schema(where, "allOf whose parts share no type");
        have = both.size() == 1 ? both[0] : both;
      } else if ((lower_bounds.contains(key) || upper_bounds.contains(key)) && have.is_number() && value.is_number()) {
        const bool take = lower_bounds.contains(key) ? value.get<double>() > have.get<double>()
                                                     : value.get<double>() < have.get<double>();
        if (take) have = value;
      } else if (key == "enum" && have.is_array() && value.is_array()) {
        json both = json::array();
        for (auto& v : have) {
          if (std::find(value.begin(), value.end(), v) != value.end()) both.push_back(v);
        }
        if (both.empty()) fail_schema(where, "allOf whose enums share no value");
        have = both;
      } else if (key == "items" || key == "additionalProperties" || key == "propertyNames") {
        if (value == json(true)) continue;
        if (have == json(true))
          have = value;
        else if (have != json(false) && value != json(false))
          have = json{{"allOf", json::array({have, value})}};
        else
          have = false;
      } else if (!json_schema_annotation(key)) {
        fail_schema(where, "allOf whose parts give '" + key + "' different values");
      }
    }
  }

  void close(json& merged, const std::string& where) {
    if (!closed_) return;
    merged["additionalProperties"] = false;
    if (merged.contains("properties")) {
      json kept = json::object();
      for (auto& [name, schema] : merged["properties"].items()) {
        if (allowed_.contains(name)) kept[name] = schema;
      }
      merged["properties"] = kept;
    }
    for (auto& name : merged.value("required", json::array())) {
      if (name.is_string() && !allowed_.contains(name.get<std::string>()))
        fail_schema(where, "allOf whose parts require '" + name.get<std::string>() + "', which another part forbids");
    }
  }

  const json& document_;
  int depth_;
  bool closed_ = false;
  std::set<std::string> allowed_;
};

}  // namespace

json merge_all_of(const json& schema, const json& document, const std::string& where) {
  return merger(document, 0).run(schema, where);
}

}  // namespace troupe
