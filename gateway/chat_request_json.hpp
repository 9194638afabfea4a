#pragma once
// The body of POST /v1/chat/completions, parsed at the edge into what the chat template
// and the engine take.
#include <string_view>

#include "base/result.hpp"
#include "gateway/api_error.hpp"
#include "gateway/generation_request_json.hpp"
#include "model/jinja/value.hpp"

namespace troupe {

struct chat_request {
  generation_options options;
  jinja::value messages;  // normalised as transformers hands them to templates
  jinja::value tools;     // undefined when none were given
  bool add_generation_prompt = true;
  jinja::object template_kwargs;  // chat_template_kwargs, e.g. enable_thinking
  int top_logprobs = -1;          // -1: no log-probs
};

result<chat_request, api_error> parse_chat_request(std::string_view body);

}  // namespace troupe
