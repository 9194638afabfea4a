#pragma once
// The body of POST /v1/messages (Anthropic's Messages API), read at the edge into the chat
// completions request it amounts to: `system` a system message, content blocks (text,
// tool_use, tool_result, thinking) chat messages with tool calls and tool results, tools
// with their input_schema function tools, tool_choice (auto, any, tool, none) OpenAI's,
// stop_sequences stop strings, thinking the chat template's enable_thinking. Images,
// documents and server tools are a 400 naming them. /v1/messages/count_tokens takes the
// same body without max_tokens.
#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "gateway/api_error.hpp"

namespace troupe {

// count_tokens: max_tokens is not asked for.
result<nlohmann::ordered_json, api_error> parse_anthropic_request(const nlohmann::ordered_json& body,
                                                                  bool count_tokens = false);

// An error as Anthropic's API answers it: {"type":"error","error":{"type","message"}}.
std::string anthropic_error_json(const api_error& e);

}  // namespace troupe
