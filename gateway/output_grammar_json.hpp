#pragma once
// The fields of a request body that constrain its output, read into the grammar the
// output must follow: response_format (text, json_object, json_schema) and vLLM's
// guided_choice on both generation endpoints, and for chat a tool_choice that forces a
// call. A schema the grammars cannot follow is a 400 naming what they lack.
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "gateway/api_error.hpp"
#include "gateway/tool_call_parser.hpp"
#include "text/grammar/grammar.hpp"

namespace troupe {

// The grammar of response_format or guided_choice; one without rules when the output is
// free text.
result<grammar, api_error> response_grammar(const nlohmann::ordered_json& body);

// A forced tool call (tool_choice "required", or the function `name`; empty: any of the
// tools) in the markup of `format`, its arguments matching the tool's parameters schema;
// `several`: one or more calls. `tools` is the request's list, already checked to be well
// formed.
result<grammar, api_error> forced_tool_call_grammar(const nlohmann::ordered_json& tools, const std::string& name,
                                                    bool several, tool_call_format format);

}  // namespace troupe
