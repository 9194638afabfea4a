#pragma once
// Splits template source into tokens, applying whitespace control as transformers
// configures jinja2: trim_blocks and lstrip_blocks on, `-` and `+` modifiers, one trailing
// newline dropped, comments removed.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace troupe::jinja {

struct token {
  enum class kind { text, print_begin, print_end, block_begin, block_end, name, string, integer, floating, op, end };
  kind type;
  std::string text;  // the text, name, operator or decoded string literal
  std::int64_t integer = 0;
  double floating = 0;
  int line = 1;
};

result<std::vector<token>> tokenize(std::string_view source);

}  // namespace troupe::jinja
