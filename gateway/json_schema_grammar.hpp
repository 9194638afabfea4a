#pragma once
// Grammars for OpenAI's structured outputs: response_format json_object and json_schema,
// and tool_choice "required" or a named function. The JSON is written compactly, with at
// most one space after ':' and ',' and none elsewhere, numbers of at most 16 digits
// before and after the point: a model with random weights cannot run on forever in
// whitespace or digits (it still can inside a string).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "model/grammar/grammar.hpp"

namespace troupe {

// Any JSON object (response_format json_object).
grammar json_object_grammar();

// Bounds of strings and arrays cost a grammar rule per unit: larger ones are refused.
inline constexpr int max_grammar_repetition = 1024;

// The JSON values `schema` allows. Supported: type (a name or a list of names) object,
// array, string, number, integer, boolean, null; properties (written in schema order),
// required, additionalProperties (false; true is accepted, but only the listed properties
// are written); items, minItems, maxItems, minLength, maxLength (each at most
// max_grammar_repetition); enum, const, anyOf; $ref to #/$defs/... or
// #/definitions/..., recursive ones included; annotations (title, description, ...).
// Any other keyword is an error naming it and where it is, e.g.
// "unsupported JSON Schema keyword 'pattern' at #/properties/name".
result<grammar> json_schema_grammar(const nlohmann::ordered_json& schema);

struct tool_schema {
  std::string name;
  nlohmann::ordered_json parameters;  // the function's JSON Schema; null: any object
};

// Qwen3 (hermes) tool calls of `tools`, each one's arguments matching its tool's schema:
// <tool_call>\n{"name": "NAME", "arguments": ARGUMENTS}\n</tool_call>
// One call, or with `several` one or more separated by a newline (as the chat template
// writes them). One tool for a named tool_choice, all offered tools for "required".
result<grammar> tool_call_grammar(const std::vector<tool_schema>& tools, bool several = false);

}  // namespace troupe
