#pragma once
// Renders a parsed, checked template with jinja2's semantics: a for-loop iteration and a
// macro call get their own scope, `if` does not; undefined prints as nothing but fails
// when used as an object. Errors name the template line; raise_exception's message is
// the whole error.
#include <string>

#include "base/result.hpp"
#include "text/jinja/ast.hpp"
#include "text/jinja/value.hpp"

namespace troupe::jinja {

result<std::string> render(const body& program, const object& variables);

}  // namespace troupe::jinja
