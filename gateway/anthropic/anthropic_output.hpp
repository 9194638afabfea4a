#pragma once
// A reply as Anthropic's Messages API writes it: a message whose content blocks are the
// thinking (the <think> text), the text and a tool_use block per call, with stop_reason
// end_turn, max_tokens, stop_sequence or tool_use; streamed as message_start, then per
// block content_block_start, content_block_delta (text_delta, thinking_delta,
// input_json_delta) and content_block_stop, then message_delta (stop_reason, usage) and
// message_stop.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/reply_dialect.hpp"

namespace troupe {

class anthropic_output : public reply_dialect {
 public:
  anthropic_output(std::string id, std::string model, int prompt_tokens);

  std::string stream_start() override;
  std::string stream_delta(const std::string& reasoning, const std::string& text,
                           const std::vector<tool_call>& calls) override;
  std::string stream_end(const reply_summary& reply) override;
  std::string body(const reply_summary& reply) const override;
  std::string stream_error(const api_error& e) const override;

 private:
  enum class open_block { none, thinking, text };
  std::string close_block();
  std::string open(open_block kind);

  std::string id_, model_;
  int prompt_tokens_;
  int index_ = -1;
  open_block open_ = open_block::none;
};

}  // namespace troupe
