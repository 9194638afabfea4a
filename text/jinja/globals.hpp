#pragma once
// The functions a template can call by name: jinja2's namespace() and range(), and
// transformers' raise_exception() and strftime_now(). The renderer handles
// raise_exception itself, since its message is the whole error.
#include <string_view>

#include "base/result.hpp"
#include "text/jinja/call_args.hpp"
#include "text/jinja/value.hpp"

namespace troupe::jinja {

bool is_global_function(std::string_view name);
result<value> call_global(std::string_view name, const call_args& args);

}  // namespace troupe::jinja
