#pragma once
// The body of POST /v1/responses (OpenAI's Responses API), read at the edge into the chat
// completions request it amounts to, so that it runs on the same path as chat: `input` (a
// string, or items: messages, function_call, function_call_output, reasoning) becomes
// messages, `instructions` a system message ahead of them, function tools chat tools,
// `text.format` a response_format, `max_output_tokens` max_tokens. Built-in tools
// (web_search, file_search, ...) and other inputs troupe cannot serve are a 400 naming them.
#include <string>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "gateway/api_error.hpp"

namespace troupe {

struct responses_request {
  nlohmann::ordered_json chat_body;  // the request as a /v1/chat/completions body
  // The conversation so far as chat messages: the previous response's, then this input
  // (the instructions are not carried over, as OpenAI does not carry them).
  nlohmann::ordered_json conversation;
  nlohmann::ordered_json echo;  // what the response object repeats of the request
  bool store = true;
};

// The previous_response_id a body names; empty when none.
std::string previous_response_id(const nlohmann::ordered_json& body);

// `previous`: the conversation of the response previous_response_id names (its caller
// looks it up), or null.
result<responses_request, api_error> parse_responses_request(const nlohmann::ordered_json& body,
                                                             const nlohmann::ordered_json* previous);

}  // namespace troupe
