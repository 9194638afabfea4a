#pragma once
// The load-time check: every filter, test, method and function a template names must be
// one the renderer implements, and break/continue must sit inside a loop. A template
// that uses something unsupported fails to load instead of rendering a wrong prompt.
#include "base/result.hpp"
#include "text/jinja/ast.hpp"

namespace troupe::jinja {

status check(const body& program);

}  // namespace troupe::jinja
