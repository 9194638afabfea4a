#pragma once
// Python's str() and repr() of template values: what `{{ x }}`, `~` and the `string`
// filter produce under transformers' jinja2 (True, None, 1.0, ['a', 1], {'k': 'v'}).
#include <string>

#include "text/jinja/value.hpp"

namespace troupe::jinja {

std::string to_string(const value& v);
void append_repr(std::string& out, const value& v);
// repr(float): the shortest digits that round-trip, as Python prints them.
std::string float_repr(double d);

}  // namespace troupe::jinja
