#pragma once
// The body of POST /v1/chat/completions, parsed at the edge into what the chat template
// and the engine take.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "gateway/api_error.hpp"
#include "gateway/openai/generation_request_json.hpp"
#include "gateway/tool_call_parser.hpp"
#include "text/jinja/value.hpp"

namespace troupe {

// tool_choice: required and function force the output to be tool calls (options'
// output_grammar); the answer is searched for calls unless it is none.
enum class tool_choice { automatic, none, required, function };

struct chat_request {
  generation_options options;
  jinja::value messages;                                     // normalised as transformers hands them to templates
  jinja::value tools;                                        // undefined when none were given
  std::shared_ptr<const std::vector<tool_spec>> tool_specs;  // the same tools, for parsing calls
  tool_choice choice = tool_choice::automatic;
  std::string choice_name;          // the tool named by tool_choice function
  bool parallel_tool_calls = true;  // tool_choice required: several calls may follow one another
  bool add_generation_prompt = true;
  jinja::object template_kwargs;  // chat_template_kwargs, e.g. enable_thinking
  int top_logprobs = -1;          // -1: no log-probs

  bool parses_tool_calls() const { return !tool_specs->empty() && choice != tool_choice::none; }
  bool forces_tool_calls() const { return choice == tool_choice::required || choice == tool_choice::function; }
};

// What one request may list (a 400 past it).
inline constexpr size_t max_messages = 4096;
inline constexpr size_t max_tools = 512;

// calls_format: the markup the chat template teaches, which a forced tool call is held to.
result<chat_request, api_error> parse_chat_request(std::string_view body, tool_call_format calls_format);
// The same of a body already read as a JSON object (gateway/json_body.hpp).
result<chat_request, api_error> parse_chat_object(nlohmann::ordered_json body, tool_call_format calls_format);

}  // namespace troupe
