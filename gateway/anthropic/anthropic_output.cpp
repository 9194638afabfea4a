#include "gateway/anthropic/anthropic_output.hpp"

#include "gateway/anthropic/anthropic_request_json.hpp"

namespace troupe {
namespace {

using json = nlohmann::ordered_json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }
std::string event(const std::string& type, const json& data) {
  return "event: " + type + "\ndata: " + dump(data) + "\n\n";
}

// Tool arguments as an object: the grammar and the parser hand over JSON objects.
json input_of(const tool_call& call) {
  json input = json::parse(call.arguments, nullptr, false);
  return input.is_object() ? input : json::object();
}

// The call ids the parser made ("call_...") as Anthropic's ("toolu_...").
std::string tool_use_id(const tool_call& call) {
  return call.id.rfind("call_", 0) == 0 ? "toolu_" + call.id.substr(5) : call.id;
}

json stop_reason(const reply_summary& reply) {
  if (reply.finish == "length") return "max_tokens";
  if (reply.finish == "tool_calls" || !reply.calls.empty()) return "tool_use";
  if (!reply.stop_string.empty()) return "stop_sequence";
  return "end_turn";
}

json usage(int prompt, int completion, int cached) {
  return {{"input_tokens", prompt - cached},
          {"output_tokens", completion},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", cached}};
}

}  // namespace

anthropic_output::anthropic_output(std::string id, std::string model, int prompt_tokens)
    : id_(std::move(id)), model_(std::move(model)), prompt_tokens_(prompt_tokens) {}

std::string anthropic_output::stream_start() {
  json message{{"id", id_},
               {"type", "message"},
               {"role", "assistant"},
               {"model", model_},
               {"content", json::array()},
               {"stop_reason", nullptr},
               {"stop_sequence", nullptr},
               {"usage", usage(prompt_tokens_, 0, 0)}};
  return event("message_start", {{"type", "message_start"}, {"message", message}});
}

std::string anthropic_output::close_block() {
  if (open_ == open_block::none) return {};
  std::string out;
  if (open_ == open_block::thinking)
    out += event("content_block_delta", {{"type", "content_block_delta"},
                                         {"index", index_},
                                         {"delta", {{"type", "signature_delta"}, {"signature", ""}}}});
  open_ = open_block::none;
  return out + event("content_block_stop", {{"type", "content_block_stop"}, {"index", index_}});
}

std::string anthropic_output::open(open_block kind) {
  if (open_ == kind) return {};
  std::string out = close_block();
  open_ = kind;
  json block = kind == open_block::thinking ? json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
                                            : json{{"type", "text"}, {"text", ""}};
  return out +
         event("content_block_start", {{"type", "content_block_start"}, {"index", ++index_}, {"content_block", block}});
}

std::string anthropic_output::stream_delta(const std::string& reasoning, const std::string& text,
                                           const std::vector<tool_call>& calls) {
  std::string out;
  if (!reasoning.empty()) {
    out += open(open_block::thinking);
    out += event("content_block_delta", {{"type", "content_block_delta"},
                                         {"index", index_},
                                         {"delta", {{"type", "thinking_delta"}, {"thinking", reasoning}}}});
  }
  if (!text.empty()) {
    out += open(open_block::text);
    out += event(
        "content_block_delta",
        {{"type", "content_block_delta"}, {"index", index_}, {"delta", {{"type", "text_delta"}, {"text", text}}}});
  }
  for (const tool_call& call : calls) {
    out += close_block();
    json block{{"type", "tool_use"}, {"id", tool_use_id(call)}, {"name", call.name}, {"input", json::object()}};
    out +=
        event("content_block_start", {{"type", "content_block_start"}, {"index", ++index_}, {"content_block", block}});
    out += event("content_block_delta",
                 {{"type", "content_block_delta"},
                  {"index", index_},
                  {"delta", {{"type", "input_json_delta"}, {"partial_json", dump(input_of(call))}}}});
    out += event("content_block_stop", {{"type", "content_block_stop"}, {"index", index_}});
  }
  return out;
}

std::string anthropic_output::stream_end(const reply_summary& reply) {
  std::string out = close_block();
  out += event("message_delta",
               {{"type", "message_delta"},
                {"delta",
                 {{"stop_reason", stop_reason(reply)},
                  {"stop_sequence", reply.stop_string.empty() ? json(nullptr) : json(reply.stop_string)}}},
                {"usage", usage(reply.prompt_tokens, reply.completion_tokens, reply.cached_tokens)}});
  return out + event("message_stop", {{"type", "message_stop"}});
}

std::string anthropic_output::body(const reply_summary& reply) const {
  json content = json::array();
  if (!reply.reasoning.empty())
    content.push_back({{"type", "thinking"}, {"thinking", reply.reasoning}, {"signature", ""}});
  if (!reply.text.empty()) content.push_back({{"type", "text"}, {"text", reply.text}});
  for (const tool_call& call : reply.calls)
    content.push_back(
        {{"type", "tool_use"}, {"id", tool_use_id(call)}, {"name", call.name}, {"input", input_of(call)}});
  return dump({{"id", id_},
               {"type", "message"},
               {"role", "assistant"},
               {"model", model_},
               {"content", content},
               {"stop_reason", stop_reason(reply)},
               {"stop_sequence", reply.stop_string.empty() ? json(nullptr) : json(reply.stop_string)},
               {"usage", usage(reply.prompt_tokens, reply.completion_tokens, reply.cached_tokens)}});
}

std::string anthropic_output::stream_error(const api_error& e) const {
  return "event: error\ndata: " + anthropic_error_json(e) + "\n\n";
}

}  // namespace troupe
