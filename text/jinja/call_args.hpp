#pragma once
// The arguments of a filter, test, method or function call, bound the Python way: by
// position or by keyword name.
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "text/jinja/value.hpp"

namespace troupe::jinja {

struct call_args {
  std::vector<value> positional;
  std::vector<std::pair<std::string, value>> keywords;

  // Fails, as Python would, on more positional arguments than `params` or an unknown
  // keyword. `what` names the callee in the message.
  status accept(std::string_view what, std::initializer_list<std::string_view> params) const;
  // The argument for parameter `index` / `name`, or null when it was not given.
  const value* get(std::size_t index, std::string_view name) const;
};

}  // namespace troupe::jinja
