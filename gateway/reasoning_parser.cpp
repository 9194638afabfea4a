#include "gateway/reasoning_parser.hpp"

#include <algorithm>

#include "gateway/streamed_text.hpp"

namespace troupe {
namespace {

constexpr std::string_view open_tag = "<think>";
constexpr std::string_view close_tag = "</think>";

void drop_leading_space(std::string& s) {
  size_t i = 0;
  while (i < s.size() && is_ascii_space(s[i])) ++i;
  s.erase(0, i);
}

}  // namespace

reasoning_parser::reasoning_parser(bool starts_in_reasoning)
    : state_(starts_in_reasoning ? state::reasoning : state::start), trim_reasoning_start_(starts_in_reasoning) {}

bool reasoning_parser::prompt_opens_reasoning(std::string_view prompt) {
  const size_t open = prompt.rfind(open_tag);
  if (open == std::string_view::npos) return false;
  const size_t close = prompt.rfind(close_tag);
  return close == std::string_view::npos || close < open;
}

reasoning_parser::output reasoning_parser::push(std::string_view text) {
  output out;
  held_ += text;
  advance(out);
  return out;
}

void reasoning_parser::advance(output& out) {
  for (;;) {
    switch (state_) {
      case state::start:
        // Only a reply that opens with `<think>` reasons; the tag later on is answer text.
        if (held_.size() < open_tag.size() && open_tag.substr(0, held_.size()) == held_) return;
        if (held_.starts_with(open_tag)) {
          held_.erase(0, open_tag.size());
          state_ = state::reasoning;
          trim_reasoning_start_ = true;
        } else {
          state_ = state::answer;
        }
        continue;
      case state::reasoning: {
        if (trim_reasoning_start_) {
          drop_leading_space(held_);
          if (held_.empty()) return;
          trim_reasoning_start_ = false;
        }
        if (const size_t end = held_.find(close_tag); end != std::string::npos) {
          size_t keep = end;
          while (keep > 0 && is_ascii_space(held_[keep - 1])) --keep;
          out.reasoning += held_.substr(0, keep);
          held_.erase(0, end + close_tag.size());
          state_ = state::answer;
          answer_newlines_ = 2;
          continue;
        }
        // Hold a possible partial tag and the whitespace before it: it is trimmed if the
        // tag follows.
        size_t keep = held_.size() - partial_marker_suffix(held_, close_tag);
        while (keep > 0 && is_ascii_space(held_[keep - 1])) --keep;
        out.reasoning += held_.substr(0, keep);
        held_.erase(0, keep);
        return;
      }
      case state::answer:
        while (answer_newlines_ > 0 && !held_.empty() && held_[0] == '\n') {
          held_.erase(0, 1);
          --answer_newlines_;
        }
        if (held_.empty()) return;
        answer_newlines_ = 0;
        out.content += held_;
        held_.clear();
        return;
    }
  }
}

reasoning_parser::output reasoning_parser::flush() {
  output out;
  if (state_ == state::reasoning) {
    size_t keep = held_.size();
    while (keep > 0 && is_ascii_space(held_[keep - 1])) --keep;
    out.reasoning = held_.substr(0, keep);
  } else {
    out.content = held_;
  }
  held_.clear();
  return out;
}

}  // namespace troupe
