#pragma once
// The Python methods templates call on strings (`s.startswith('<')`) and dicts
// (`d.items()`). Calls to any other method are rejected when the template loads.
#include <string_view>

#include "base/result.hpp"
#include "text/jinja/call_args.hpp"
#include "text/jinja/value.hpp"

namespace troupe::jinja {

bool is_method(std::string_view name);
// Whether `self` has the method, as Python's attribute lookup would find it.
bool has_method(const value& self, std::string_view name);
result<value> call_method(const value& self, std::string_view name, const call_args& args);

}  // namespace troupe::jinja
