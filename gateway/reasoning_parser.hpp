#pragma once
// Splits a chat reply's `<think>...</think>` reasoning from its answer while the text
// streams in, in pieces of any size: a tag split across pieces is held back until it is
// whole, so no part of the markup reaches either side. The answer is the reply's text
// byte for byte but for the two newlines Qwen's template writes after `</think>`; the
// reasoning is trimmed of the whitespace around it.
#include <string>
#include <string_view>

namespace troupe {

class reasoning_parser {
 public:
  struct output {
    std::string reasoning;
    std::string content;
  };

  // starts_in_reasoning: the prompt already opened `<think>` (Qwen3.5 with thinking on),
  // so the reply begins inside the reasoning and only `</think>` will come.
  explicit reasoning_parser(bool starts_in_reasoning);

  // Whether the rendered prompt ends inside an open `<think>` block.
  static bool prompt_opens_reasoning(std::string_view prompt);

  output push(std::string_view text);
  // The end of generation: what was held back; an unclosed block stays reasoning.
  output flush();

 private:
  enum class state { start, reasoning, answer };
  void advance(output& out);

  state state_;
  std::string held_;
  bool trim_reasoning_start_;  // whitespace after `<think>` is not reasoning
  int answer_newlines_ = 0;    // newlines after `</think>` still to drop
};

}  // namespace troupe
