#pragma once
// A chat reply written for an API other than chat completions: OpenAI's Responses API
// (openai/responses_output.hpp) and Anthropic's Messages API
// (anthropic/anthropic_output.hpp) take the same reply (reasoning, answer text, tool
// calls) as their own objects and streamed events.
// generation_call parses the reply and hands the pieces to its dialect.
#include <string>
#include <vector>

#include "gateway/api_error.hpp"
#include "gateway/tool_call_parser.hpp"

namespace troupe {

struct reply_summary {
  std::string reasoning, text;
  std::vector<tool_call> calls;
  std::string finish;       // "stop", "length", "tool_calls", "error"
  std::string stop_string;  // the stop string that ended it, if one did
  int prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
};

class reply_dialect {
 public:
  virtual ~reply_dialect() = default;
  // The stream's first events.
  virtual std::string stream_start() = 0;
  // A new piece of the reply: reasoning, then answer text, then the calls it completed.
  virtual std::string stream_delta(const std::string& reasoning, const std::string& text,
                                   const std::vector<tool_call>& calls) = 0;
  // The stream's last events, once the reply is whole.
  virtual std::string stream_end(const reply_summary& reply) = 0;
  // The whole reply as one JSON body.
  virtual std::string body(const reply_summary& reply) const = 0;
  // An error after the stream began, as the API's last event.
  virtual std::string stream_error(const api_error& e) const = 0;
};

}  // namespace troupe
