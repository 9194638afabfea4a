#include "gateway/request_preparation.hpp"

#include <algorithm>

#include "base/random_id.hpp"
#include "gateway/anthropic/anthropic_output.hpp"
#include "gateway/anthropic/anthropic_request_json.hpp"
#include "gateway/chat_prompt.hpp"
#include "gateway/json_body.hpp"
#include "gateway/openai/chat_request_json.hpp"
#include "gateway/openai/generation_request_json.hpp"
#include "gateway/openai/openai_endpoints.hpp"
#include "gateway/openai/responses_output.hpp"
#include "gateway/openai/responses_request_json.hpp"
#include "gateway/reasoning_grammar.hpp"
#include "gateway/reasoning_parser.hpp"

namespace troupe {
namespace {

prepared_request completion(const preparation_context& c, const http::request& request) {
  auto parsed = parse_completion_request(request.body);
  if (!parsed) return {parsed.err()};
  if (!c.serves(parsed->options.model)) return {unknown_model(parsed->options.model)};
  prepared_generation g{api_kind::completion, std::move(parsed->options), parsed->logprobs, parsed->echo, {}, {}};
  for (auto& p : parsed->prompts) {
    if (p.is_ids) {
      g.prompts.push_back({std::move(p.ids), {}});
      continue;
    }
    auto ids = c.tok->encode(p.text);
    if (!ids) return {bad_param("prompt", ids.err().message)};
    g.prompts.push_back({std::move(*ids), std::move(p.text)});
  }
  return {std::move(g)};
}

// A chat body parsed, its model checked and its messages rendered by the chat template.
struct rendered_chat {
  chat_request request;
  chat_prompt prompt;
};

result<rendered_chat, api_error> render_chat(const preparation_context& c, nlohmann::ordered_json body,
                                             const std::string& without_template) {
  auto parsed = parse_chat_object(std::move(body), c.tool_format);
  if (!parsed) return parsed.err();
  if (!c.serves(parsed->options.model)) return unknown_model(parsed->options.model);
  if (!c.chat) return bad_request(without_template);
  auto prompt = render_chat_prompt(*c.chat, *c.tok, *parsed, c.special_tokens_in_content);
  if (!prompt) return bad_param("messages", prompt.err().message);
  return rendered_chat{std::move(parsed).value(), std::move(prompt).value()};
}

// A chat completions body (the client's, or what a Responses or Messages request amounts to).
prepared_request chat_generation(const preparation_context& c, nlohmann::ordered_json body) {
  auto chat = render_chat(c, std::move(body), "this model has no chat template; use /v1/completions");
  if (!chat) return {chat.err()};
  auto& [parsed, prompt] = *chat;
  prepared_generation g{api_kind::chat, std::move(parsed.options), parsed.top_logprobs, false, {}, {}};
  // Without max_tokens a chat reply may run to the end of the context, as in OpenAI's API.
  if (g.options.max_tokens < 0) g.options.max_tokens = std::max(1, c.max_model_len - int(prompt.ids.size()));
  g.parsing = {reasoning_parser::prompt_opens_reasoning(prompt.text), std::nullopt, parsed.tool_specs};
  if (parsed.parses_tool_calls()) g.parsing.tool_format = c.tool_format;
  g.parsing.forced_calls = parsed.forces_tool_calls();
  // A prompt that opened <think> leaves the reasoning free: the answer is what is constrained.
  if (g.parsing.starts_in_reasoning && !g.options.output_grammar.rules.empty())
    g.options.output_grammar = after_reasoning(g.options.output_grammar);
  g.prompts.push_back({std::move(prompt.ids), {}});
  return {std::move(g)};
}

prepared_request chat_completion(const preparation_context& c, const http::request& request) {
  auto body = parse_json_object(request.body);
  if (!body) return {body.err()};
  return chat_generation(c, std::move(*body));
}

prepared_request responses(const preparation_context& c, const http::request& request) {
  auto body = parse_json_object(request.body);
  if (!body) return {body.err()};
  const std::string previous_id = previous_response_id(*body);
  std::optional<response_store::entry> previous;
  if (!previous_id.empty()) {
    previous = c.responses->get(previous_id);
    if (!previous)
      return {api_error{404, "Previous response with id '" + previous_id + "' not found.", "invalid_request_error",
                        "previous_response_id", "previous_response_not_found"}};
  }
  auto r = parse_responses_request(*body, previous ? &previous->conversation : nullptr);
  if (!r) return {r.err()};
  prepared_request p = chat_generation(c, r->chat_body);
  auto* g = std::get_if<prepared_generation>(&p.what);
  if (!g) return p;
  const std::string id = random_id("resp_");
  g->dialect = std::make_shared<responses_output>(id, g->options.model, r->echo);
  g->turn = responses_turn{id, std::move(r->conversation), r->store};
  return p;
}

prepared_request messages(const preparation_context& c, const http::request& request) {
  auto body = parse_json_object(request.body);
  if (!body) return {body.err()};
  auto chat = parse_anthropic_request(*body);
  if (!chat) return {chat.err()};
  prepared_request p = chat_generation(c, std::move(*chat));
  auto* g = std::get_if<prepared_generation>(&p.what);
  if (!g) return p;
  g->dialect =
      std::make_shared<anthropic_output>(random_id("msg_"), g->options.model, int(g->prompts.front().ids.size()));
  return p;
}

// /v1/messages/count_tokens: the prompt the chat template makes of the messages, counted.
prepared_request count_tokens(const preparation_context& c, const http::request& request) {
  auto body = parse_json_object(request.body);
  if (!body) return {body.err()};
  auto anthropic = parse_anthropic_request(*body, true);
  if (!anthropic) return {anthropic.err()};
  auto chat = render_chat(c, std::move(*anthropic), "this model has no chat template");
  if (!chat) return {chat.err()};
  return {tokenize_answer{nlohmann::ordered_json{{"input_tokens", chat->prompt.ids.size()}}.dump()}};
}

// /tokenize with `messages`: the prompt the chat template makes of them; with `prompt`: its ids.
prepared_request tokenize(const preparation_context& c, const http::request& request) {
  auto body = parse_json_object(request.body);
  if (!body) return {body.err()};
  if (body->contains("messages")) {
    auto chat = render_chat(c, std::move(*body), "this model has no chat template");
    if (!chat) return {chat.err()};
    return {tokenize_answer{tokenize_json(chat->prompt.ids, c.max_model_len)}};
  }
  auto r = parse_tokenize_request(*body);
  if (!r) return {r.err()};
  if (!c.serves(r->model)) return {unknown_model(r->model)};
  auto ids = c.tok->encode(r->prompt);
  if (!ids) return {bad_param("prompt", ids.err().message)};
  return {tokenize_answer{tokenize_json(*ids, c.max_model_len)}};
}

}  // namespace

prepared_request prepare_request(const preparation_context& context, const http::request& request) {
  if (request.path == "/v1/completions") return completion(context, request);
  if (request.path == "/v1/chat/completions") return chat_completion(context, request);
  if (request.path == "/tokenize") return tokenize(context, request);
  if (request.path == "/v1/responses") return responses(context, request);
  if (request.path == "/v1/messages") return messages(context, request);
  if (request.path == "/v1/messages/count_tokens") return count_tokens(context, request);
  return {no_endpoint(request.path)};
}

}  // namespace troupe
