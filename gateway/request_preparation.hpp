#pragma once
// The work a request needs before the engine sees it, which grows with the request: its
// JSON, the JSON Schema's grammar, the chat template, tokenization. It runs on a preparer
// thread (actors/request_preparer.hpp), off the gateway actor, so one large request holds
// up neither the others nor /health and /v1/models.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "gateway/api_error.hpp"
#include "gateway/generation_call.hpp"
#include "gateway/http/http_request.hpp"
#include "gateway/openai/response_store.hpp"
#include "text/chat_template.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace troupe {

// Whether `model` is one of the names the model is served under.
inline bool serves_model(const std::vector<std::string>& served_model_names, const std::string& model) {
  return std::find(served_model_names.begin(), served_model_names.end(), model) != served_model_names.end();
}

struct preparation_context {
  bool serves(const std::string& model) const { return serves_model(served_model_names, model); }
  std::vector<std::string> served_model_names;
  std::shared_ptr<const tokenizer> tok;
  std::shared_ptr<const chat_template> chat;                // null when the model ships none
  tool_call_format tool_format = tool_call_format::hermes;  // the markup the chat template teaches
  int max_model_len = 0;
  bool special_tokens_in_content = false;     // gateway/chat_prompt.hpp
  std::shared_ptr<response_store> responses;  // the Responses API's stored responses
};

// A /v1/responses turn, stored once it completes when `store` (openai/response_store.hpp).
struct responses_turn {
  std::string id;
  nlohmann::ordered_json conversation;  // chat messages up to this reply
  bool store = true;
};

// What a /v1/completions, /v1/chat/completions, /v1/responses or /v1/messages request asks
// of the engine.
struct prepared_generation {
  api_kind kind = api_kind::completion;
  generation_options options;
  int logprobs = -1;
  bool echo = false;
  std::vector<generation_call::choice_prompt> prompts;
  chat_reply_parsing parsing;
  std::shared_ptr<reply_dialect> dialect;  // /v1/responses and /v1/messages write the reply their way
  std::optional<responses_turn> turn;      // /v1/responses
};

// A /tokenize or /v1/messages/count_tokens request's whole 200 answer.
struct tokenize_answer {
  std::string json;
};

struct prepared_request {
  std::variant<prepared_generation, tokenize_answer, api_error> what;
};

// The request to /v1/completions, /v1/chat/completions, /v1/responses, /v1/messages,
// /v1/messages/count_tokens or /tokenize, parsed, rendered and tokenized; an error names the
// field at fault.
prepared_request prepare_request(const preparation_context& context, const http::request& request);

}  // namespace troupe
