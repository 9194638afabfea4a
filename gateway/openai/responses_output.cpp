#include "gateway/openai/responses_output.hpp"

#include <chrono>

namespace troupe {
namespace {

using json = nlohmann::ordered_json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// The items' ids: the response's id with the item's kind and place.
std::string item_id(const std::string& response_id, const char* kind, int n) {
  return std::string(kind) + "_" + response_id.substr(response_id.find('_') + 1) + "_" + std::to_string(n);
}

json reasoning_item(const std::string& id, const std::string& text, const char* status) {
  json content = json::array();
  if (!text.empty() || std::string(status) == "completed")
    content.push_back({{"type", "reasoning_text"}, {"text", text}});
  return {{"type", "reasoning"}, {"id", id}, {"summary", json::array()}, {"content", content}, {"status", status}};
}

json text_part(const std::string& text) {
  return {{"type", "output_text"}, {"text", text}, {"annotations", json::array()}, {"logprobs", json::array()}};
}

json message_item(const std::string& id, const std::string& text, const char* status, bool with_part) {
  json content = json::array();
  if (with_part) content.push_back(text_part(text));
  return {{"type", "message"}, {"id", id}, {"status", status}, {"role", "assistant"}, {"content", content}};
}

json call_item(const std::string& id, const tool_call& call, const char* status) {
  return {{"type", "function_call"},     {"id", id},        {"call_id", call.id}, {"name", call.name},
          {"arguments", call.arguments}, {"status", status}};
}

}  // namespace

responses_output::responses_output(std::string id, std::string model, json request_echo)
    : id_(std::move(id)),
      model_(std::move(model)),
      created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                   .count()),
      echo_(std::move(request_echo)) {}

json responses_output::output_items(const reply_summary& reply) const {
  json items = json::array();
  int n = 0;
  if (!reply.reasoning.empty()) items.push_back(reasoning_item(item_id(id_, "rs", n++), reply.reasoning, "completed"));
  // A reply of calls alone has no message item, as OpenAI writes it.
  if (!reply.text.empty() || reply.calls.empty())
    items.push_back(message_item(item_id(id_, "msg", n++), reply.text,
                                 reply.finish == "length" ? "incomplete" : "completed", true));
  int c = 0;
  for (const tool_call& call : reply.calls) items.push_back(call_item(item_id(id_, "fc", c++), call, "completed"));
  return items;
}

json responses_output::response(const reply_summary* reply) const {
  json r{{"id", id_},        {"object", "response"},          {"created_at", created_}, {"status", "in_progress"},
         {"error", nullptr}, {"incomplete_details", nullptr}, {"model", model_},        {"output", json::array()}};
  for (auto& [key, value] : echo_.items()) r[key] = value;
  r["usage"] = nullptr;
  if (!reply) return r;
  if (reply->finish == "error")
    r["status"] = "failed";
  else if (reply->finish == "cancelled")
    r["status"] = "cancelled";
  else if (reply->finish == "length") {
    r["status"] = "incomplete";
    r["incomplete_details"] = {{"reason", "max_output_tokens"}};
  } else {
    r["status"] = "completed";
  }
  r["output"] = output_items(*reply);
  r["usage"] = {{"input_tokens", reply->prompt_tokens},
                {"input_tokens_details", {{"cached_tokens", reply->cached_tokens}}},
                {"output_tokens", reply->completion_tokens},
                {"output_tokens_details", {{"reasoning_tokens", 0}}},
                {"total_tokens", reply->prompt_tokens + reply->completion_tokens}};
  return r;
}

std::string responses_output::event(const std::string& type, json payload) {
  json e{{"type", type}};
  for (auto& [key, value] : payload.items()) e[key] = std::move(value);
  e["sequence_number"] = sequence_++;
  return "event: " + type + "\ndata: " + dump(e) + "\n\n";
}

std::string responses_output::stream_start() {
  std::string out = event("response.created", {{"response", response(nullptr)}});
  return out + event("response.in_progress", {{"response", response(nullptr)}});
}

std::string responses_output::close_item() {
  std::string out;
  const int index = output_index_;
  const std::string id = item_id(id_, open_ == open_item::reasoning ? "rs" : "msg", items_ - 1);
  if (open_ == open_item::reasoning) {
    json part{{"type", "reasoning_text"}, {"text", item_text_}};
    out += event("response.reasoning_text.done",
                 {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"text", item_text_}});
    out += event("response.content_part.done",
                 {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"part", part}});
    out += event("response.output_item.done",
                 {{"output_index", index}, {"item", reasoning_item(id, item_text_, "completed")}});
  } else if (open_ == open_item::message) {
    out += event("response.output_text.done", {{"item_id", id},
                                               {"output_index", index},
                                               {"content_index", 0},
                                               {"text", item_text_},
                                               {"logprobs", json::array()}});
    out += event("response.content_part.done",
                 {{"item_id", id}, {"output_index", index}, {"content_index", 0}, {"part", text_part(item_text_)}});
    out += event("response.output_item.done",
                 {{"output_index", index}, {"item", message_item(id, item_text_, "completed", true)}});
  }
  open_ = open_item::none;
  item_text_.clear();
  return out;
}

std::string responses_output::open(open_item kind) {
  if (open_ == kind) return {};
  std::string out = close_item();
  open_ = kind;
  ++output_index_;
  const std::string id = item_id(id_, kind == open_item::reasoning ? "rs" : "msg", items_++);
  if (kind == open_item::reasoning) {
    out += event("response.output_item.added",
                 {{"output_index", output_index_}, {"item", reasoning_item(id, "", "in_progress")}});
    out += event("response.content_part.added", {{"item_id", id},
                                                 {"output_index", output_index_},
                                                 {"content_index", 0},
                                                 {"part", {{"type", "reasoning_text"}, {"text", ""}}}});
  } else {
    out += event("response.output_item.added",
                 {{"output_index", output_index_}, {"item", message_item(id, "", "in_progress", false)}});
    out += event("response.content_part.added",
                 {{"item_id", id}, {"output_index", output_index_}, {"content_index", 0}, {"part", text_part("")}});
  }
  return out;
}

std::string responses_output::stream_delta(const std::string& reasoning, const std::string& text,
                                           const std::vector<tool_call>& calls) {
  std::string out;
  if (!reasoning.empty()) {
    out += open(open_item::reasoning);
    item_text_ += reasoning;
    out += event("response.reasoning_text.delta", {{"item_id", item_id(id_, "rs", items_ - 1)},
                                                   {"output_index", output_index_},
                                                   {"content_index", 0},
                                                   {"delta", reasoning}});
  }
  if (!text.empty()) {
    out += open(open_item::message);
    item_text_ += text;
    out += event("response.output_text.delta", {{"item_id", item_id(id_, "msg", items_ - 1)},
                                                {"output_index", output_index_},
                                                {"content_index", 0},
                                                {"delta", text},
                                                {"logprobs", json::array()}});
  }
  for (const tool_call& call : calls) {
    out += close_item();
    const std::string id = item_id(id_, "fc", calls_++);
    ++output_index_;
    tool_call opened = call;
    opened.arguments.clear();
    out += event("response.output_item.added",
                 {{"output_index", output_index_}, {"item", call_item(id, opened, "in_progress")}});
    out += event("response.function_call_arguments.delta",
                 {{"item_id", id}, {"output_index", output_index_}, {"delta", call.arguments}});
    out +=
        event("response.function_call_arguments.done",
              {{"item_id", id}, {"output_index", output_index_}, {"name", call.name}, {"arguments", call.arguments}});
    out += event("response.output_item.done",
                 {{"output_index", output_index_}, {"item", call_item(id, call, "completed")}});
  }
  return out;
}

std::string responses_output::stream_end(const reply_summary& reply) {
  // A reply with neither text nor calls still has its (empty) message, as in the body.
  std::string out = reply.text.empty() && reply.calls.empty() ? open(open_item::message) : std::string();
  out += close_item();
  const char* last = reply.finish == "error"                                   ? "response.failed"
                     : reply.finish == "length" || reply.finish == "cancelled" ? "response.incomplete"
                                                                               : "response.completed";
  return out + event(last, {{"response", response(&reply)}});
}

std::string responses_output::body(const reply_summary& reply) const { return dump(response(&reply)); }

std::string responses_output::stream_error(const api_error& e) const {
  json failed = response(nullptr);
  failed["status"] = "failed";
  failed["error"] = {{"code", e.code.empty() ? e.type : e.code}, {"message", e.message}};
  json ev{{"type", "response.failed"}, {"response", failed}, {"sequence_number", sequence_}};
  return "event: response.failed\ndata: " + dump(ev) + "\n\n";
}

}  // namespace troupe
