#include "gateway/output_grammar_json.hpp"

#include <algorithm>
#include <vector>

#include "gateway/json_schema/json_schema_grammar.hpp"
#include "gateway/xml_tool_call_grammar.hpp"
#include "text/grammar/compiled_grammar.hpp"
#include "text/grammar/grammar_builder.hpp"

namespace troupe {
namespace {

using json = nlohmann::ordered_json;

// What reaches the engine must compile: a schema whose $ref loops back to itself before
// any text (left recursion) is the client's error, not the stage's.
result<grammar, api_error> compilable(result<grammar> g, const std::string& param, const std::string& what) {
  if (!g) return bad_param(param, what + ": " + g.err().message);
  if (auto compiled = compiled_grammar::compile(*g); !compiled)
    return bad_param(param, what + " cannot be followed: " + compiled.err().message);
  return std::move(g).value();
}

result<grammar, api_error> guided_choice_grammar(const json& choices) {
  if (!choices.is_array() || choices.empty() ||
      !std::all_of(choices.begin(), choices.end(), [](const json& c) { return c.is_string(); }))
    return bad_param("guided_choice", "guided_choice must be a non-empty list of strings");
  grammar_builder b;
  std::vector<std::string> texts;
  for (const json& c : choices) texts.push_back(c.get<std::string>());
  return b.finish(b.one_of(std::move(texts)));
}

result<grammar, api_error> response_format_grammar(const json& format) {
  const std::string shape = R"(response_format must be {"type": "text"}, {"type": "json_object"} or )"
                            R"({"type": "json_schema", "json_schema": {"name": ..., "schema": {...}}})";
  if (!format.is_object() || !format.contains("type") || !format["type"].is_string())
    return bad_param("response_format", shape);
  const std::string type = format["type"].get<std::string>();
  if (type == "text") return grammar{};
  if (type == "json_object") return json_object_grammar();
  if (type != "json_schema" || !format.contains("json_schema") || !format["json_schema"].is_object())
    return bad_param("response_format", shape);
  // No schema is the empty schema: any JSON value. What the grammar cannot enforce is a 400
  // under strict: true, and left out (logged) otherwise, strict being false unless given.
  const json schema = format["json_schema"].value("schema", json::object());
  const bool strict = format["json_schema"].value("strict", json(false)) == json(true);
  return compilable(json_schema_grammar(schema, strict), "response_format", "response_format.json_schema.schema");
}

}  // namespace

result<grammar, api_error> response_grammar(const json& body) {
  const json none;
  const json& format = body.contains("response_format") ? body["response_format"] : none;
  if (!body.contains("guided_choice") || body["guided_choice"].is_null())
    return format.is_null() ? grammar{} : response_format_grammar(format);
  if (!format.is_null() && !(format.is_object() && format.value("type", json()) == "text"))
    return bad_param("guided_choice", "guided_choice and a JSON response_format exclude each other");
  return guided_choice_grammar(body["guided_choice"]);
}

result<grammar, api_error> forced_tool_call_grammar(const json& tools, const std::string& name, bool several,
                                                    tool_call_format format) {
  std::vector<tool_schema> callable;
  for (const json& t : tools) {
    const json& function = t["function"];
    if (!name.empty() && function["name"] != name) continue;
    // Without parameters, or with the empty schema: any object (hermes), no parameters (xml).
    json parameters = function.value("parameters", json(nullptr));
    if (parameters == json::object()) parameters = nullptr;
    callable.push_back({function["name"].get<std::string>(), std::move(parameters),
                        function.value("strict", json(false)) == json(true)});
  }
  auto calls =
      format == tool_call_format::xml ? xml_tool_call_grammar(callable, several) : tool_call_grammar(callable, several);
  return compilable(std::move(calls), "tools", "the tools' parameters");
}

}  // namespace troupe
