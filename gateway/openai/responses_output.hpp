#pragma once
// A reply as OpenAI's Responses API writes it: a response object whose output holds a
// reasoning item (the <think> text), a message item with one output_text part, and a
// function_call item per tool call; streamed as the documented events (response.created,
// response.in_progress, response.output_item.added, response.content_part.added,
// response.reasoning_text.delta, response.output_text.delta,
// response.function_call_arguments.delta and .done, ..., response.completed or
// response.incomplete), each with its sequence_number.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/reply_dialect.hpp"

namespace troupe {

// What a response object repeats of its request (instructions, tools, tool_choice, text,
// temperature, ...): a JSON object whose members are copied into every response object.
class responses_output : public reply_dialect {
 public:
  responses_output(std::string id, std::string model, nlohmann::ordered_json request_echo);

  std::string stream_start() override;
  std::string stream_delta(const std::string& reasoning, const std::string& text,
                           const std::vector<tool_call>& calls) override;
  std::string stream_end(const reply_summary& reply) override;
  std::string body(const reply_summary& reply) const override;
  std::string stream_error(const api_error& e) const override;

  // The response object: status "in_progress" while `reply` is null.
  nlohmann::ordered_json response(const reply_summary* reply) const;
  // The output items of a whole reply.
  nlohmann::ordered_json output_items(const reply_summary& reply) const;

 private:
  enum class open_item { none, reasoning, message };

  std::string event(const std::string& type, nlohmann::ordered_json payload);
  std::string close_item();
  std::string open(open_item kind);

  std::string id_, model_;
  int64_t created_;
  nlohmann::ordered_json echo_;
  int sequence_ = 0;
  int output_index_ = -1;
  open_item open_ = open_item::none;
  std::string item_text_;  // what the open item has streamed
  int items_ = 0;          // items opened, for their ids
  int calls_ = 0;
};

}  // namespace troupe
