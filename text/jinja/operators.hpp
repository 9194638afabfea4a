#pragma once
// Python semantics of the operators templates use: truthiness, ==, ordering, `in`,
// arithmetic (bool counts as an int, `/` is true division, `//` and `%` floor), `~`.
#include <optional>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "text/jinja/value.hpp"

namespace troupe::jinja {

bool truthy(const value& v);
bool equals(const value& a, const value& b);
// Python's name for the type, for error messages: str, int, list, dict, NoneType, ...
std::string type_name(const value& v);
// `s` in single quotes, for error messages.
std::string quoted(std::string_view s);

// Every binary operator except `and` and `or`, which the renderer short-circuits.
result<value> apply_binary(std::string_view op, const value& a, const value& b);
// Unary minus and plus; `not` is `!truthy`.
result<value> apply_unary(std::string_view op, const value& v);
result<bool> contains(const value& container, const value& item);
// Python's iter(): list items, string characters, dict keys, nothing for undefined, and
// nullopt for what cannot be iterated.
std::optional<array> iterate(const value& v);

}  // namespace troupe::jinja
