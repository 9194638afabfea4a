#include "gateway/tool_call_parser.hpp"

#include <algorithm>

#include "base/random_id.hpp"
#include "gateway/streamed_text.hpp"
#include "gateway/tool_call_markup.hpp"

namespace troupe {
namespace {

constexpr std::string_view open_tag = "<tool_call>";
constexpr std::string_view close_tag = "</tool_call>";

}  // namespace

tool_call_parser::tool_call_parser(tool_call_format format, std::shared_ptr<const std::vector<tool_spec>> tools)
    : format_(format), tools_(std::move(tools)) {}

tool_call_format tool_call_parser::format_of_template(std::string_view template_source) {
  return template_source.find("<function=") != std::string_view::npos ? tool_call_format::xml
                                                                      : tool_call_format::hermes;
}

tool_call_parser::output tool_call_parser::push(std::string_view text) {
  output out;
  held_ += text;
  advance(out);
  return out;
}

void tool_call_parser::advance(output& out) {
  for (;;) {
    if (in_block_) {
      const size_t end = held_.find(close_tag);
      if (end == std::string::npos) return;
      finish_block(std::string_view(held_).substr(0, end), out);
      held_.erase(0, end + close_tag.size());
      in_block_ = false;
      continue;
    }
    if (const size_t start = held_.find(open_tag); start != std::string::npos) {
      release(held_.substr(0, start), out);
      held_.erase(0, start + open_tag.size());
      in_block_ = true;
      continue;
    }
    const size_t keep = partial_marker_suffix(held_, open_tag);
    release(held_.substr(0, held_.size() - keep), out);
    held_.erase(0, held_.size() - keep);
    return;
  }
}

void tool_call_parser::finish_block(std::string_view body, output& out) {
  auto call = read_tool_call(format_, body, *tools_);
  if (!call) return release(std::string(open_tag) + std::string(body) + std::string(close_tag), out);
  // The whitespace that led up to the call belongs to the markup, not the answer.
  space_.clear();
  found_call_ = true;
  call->id = random_id("call_");
  out.calls.push_back(std::move(*call));
}

void tool_call_parser::release(std::string text, output& out) {
  text = space_ + text;
  size_t end = text.size();
  while (end > 0 && is_ascii_space(text[end - 1])) --end;
  space_ = text.substr(end);
  out.content += text.substr(0, end);
}

tool_call_parser::output tool_call_parser::flush() {
  output out;
  release((in_block_ ? std::string(open_tag) : std::string()) + held_, out);
  held_.clear();
  in_block_ = false;
  // Trailing whitespace stays with a plain answer and goes with the markup after calls.
  if (!found_call_) out.content += space_;
  space_.clear();
  return out;
}

}  // namespace troupe
