#pragma once
// The body of POST /v1/completions, parsed into native types at the edge. The sampling
// fields are shared with chat completions (parse_generation_options).
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"
#include "gateway/api_error.hpp"
#include "model/sampling.hpp"
#include "text/grammar/grammar.hpp"

namespace troupe {

struct generation_options {
  std::string model;
  int max_tokens = -1;  // -1: not given
  sampling_params sampling;
  bool has_seed = false;
  int n = 1;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::vector<std::string> stop;
  std::vector<int> stop_token_ids;
  bool ignore_eos = false;
  bool skip_special_tokens = true;
  bool return_tokens_as_token_ids = false;  // vLLM: "token_id:N" instead of token text
  std::string user;                         // OpenAI's end-user id; also a session key that keeps a replica
  grammar output_grammar;                   // response_format, guided_choice or a forced tool call; no rules: free
};

// What one request may list (a 400 past it).
inline constexpr size_t max_stop_strings = 64;
inline constexpr size_t max_stop_bytes = 1024;
inline constexpr size_t max_token_list = 4096;  // stop_token_ids, logit_bias entries

struct prompt_input {
  std::string text;      // a text prompt, or
  std::vector<int> ids;  // a token-id prompt
  bool is_ids = false;
};

struct completion_request {
  generation_options options;
  std::vector<prompt_input> prompts;
  int logprobs = -1;  // -1: none; else how many alternatives besides the chosen token
  bool echo = false;
};

// The options every generation endpoint takes; `body` must be a JSON object (ordered: a
// json_schema's properties are written in the order the client gave them).
result<generation_options, api_error> parse_generation_options(const nlohmann::ordered_json& body);

result<completion_request, api_error> parse_completion_request(std::string_view body);

}  // namespace troupe
