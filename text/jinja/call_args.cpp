#include "text/jinja/call_args.hpp"

namespace troupe::jinja {

status call_args::accept(std::string_view what, std::initializer_list<std::string_view> params) const {
  if (positional.size() > params.size())
    return error{std::string(what) + " takes at most " + std::to_string(params.size()) + " argument(s), got " +
                 std::to_string(positional.size())};
  for (const auto& [key, v] : keywords) {
    bool known = false;
    for (std::string_view p : params) known = known || p == key;
    if (!known) return error{std::string(what) + " got an unexpected keyword argument '" + key + "'"};
  }
  return ok();
}

const value* call_args::get(std::size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [key, v] : keywords)
    if (key == name) return &v;
  return nullptr;
}

}  // namespace troupe::jinja
