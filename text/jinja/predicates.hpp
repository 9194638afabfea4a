#pragma once
// Jinja's tests (`x is defined`, `x is not none`), with jinja2's semantics. Unknown tests
// are rejected when the template loads.
#include <string_view>

#include "base/result.hpp"
#include "text/jinja/call_args.hpp"
#include "text/jinja/value.hpp"

namespace troupe::jinja {

bool is_test(std::string_view name);
result<bool> apply_test(std::string_view name, const value& v, const call_args& args);

}  // namespace troupe::jinja
