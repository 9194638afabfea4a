#pragma once
// Grammars for OpenAI's structured outputs: response_format json_object and json_schema,
// and tool_choice "required" or a named function in the hermes markup. The JSON is written
// compactly (json_schema_rules.hpp): a model with random weights cannot run on forever in
// whitespace or digits (it still can inside a string).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "gateway/json_schema/json_schema_translator.hpp"
#include "text/grammar/grammar.hpp"

namespace troupe {

// Any JSON object (response_format json_object).
grammar json_object_grammar();

// The JSON values `schema` allows, with the keywords schema_translator supports. With
// strict, any other keyword is an error naming it and where it is, e.g.
// "unsupported JSON Schema keyword 'not' at #/properties/name"; without, it is left out
// and the server's log names it, once per keyword (OpenAI's strict: false).
result<grammar> json_schema_grammar(const nlohmann::ordered_json& schema, bool strict = true);

struct tool_schema {
  std::string name;
  nlohmann::ordered_json parameters;  // the function's JSON Schema; null: any object
  bool strict = true;                 // the function's strict
};

// Qwen3 (hermes) tool calls of `tools`, each one's arguments matching its tool's schema:
// <tool_call>\n{"name": "NAME", "arguments": ARGUMENTS}\n</tool_call>
// One call, or with `several` one or more separated by a newline (as the chat template
// writes them). One tool for a named tool_choice, all offered tools for "required".
result<grammar> tool_call_grammar(const std::vector<tool_schema>& tools, bool several = false);

}  // namespace troupe
