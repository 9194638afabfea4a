#pragma once
// The filters chat templates use (`x | tojson`), with jinja2's semantics and transformers'
// tojson. Anything else is rejected when the template loads.
#include <string_view>

#include "base/result.hpp"
#include "text/jinja/call_args.hpp"
#include "text/jinja/value.hpp"

namespace troupe::jinja {

bool is_filter(std::string_view name);
result<value> apply_filter(std::string_view name, const value& v, const call_args& args);

}  // namespace troupe::jinja
