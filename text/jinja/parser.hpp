#pragma once
// Parses template source into statements. Syntax errors (an unknown tag, a block that is
// never closed, a stray `{% endif %}`) come back as errors naming the line.
#include <string_view>

#include "base/result.hpp"
#include "text/jinja/ast.hpp"

namespace troupe::jinja {

result<body> parse(std::string_view source);

}  // namespace troupe::jinja
