#include "text/jinja/globals.hpp"

#include <ctime>
#include <memory>

#include "text/jinja/operators.hpp"

namespace troupe::jinja {
namespace {

// jinja2 refuses ranges this long too (MAX_RANGE in its sandbox).
constexpr std::int64_t max_range = 100000;

result<value> make_namespace(const call_args& args) {
  if (args.positional.size() > 1) return error{"namespace expected at most 1 positional argument"};
  auto ns = std::make_shared<namespace_state>();
  if (!args.positional.empty()) {
    if (!args.positional[0].is_object()) return error{"namespace argument must be a mapping"};
    ns->attributes = args.positional[0].as_object();
  }
  for (const auto& [key, v] : args.keywords) ns->attributes.set(key, v);
  return value(std::move(ns));
}

result<value> range(const call_args& args) {
  if (!args.keywords.empty() || args.positional.empty() || args.positional.size() > 3)
    return error{"range expects 1 to 3 integer arguments"};
  for (const value& a : args.positional)
    if (!a.is_int()) return error{"range arguments must be integers, got '" + type_name(a) + "'"};
  const auto& p = args.positional;
  const std::int64_t start = p.size() > 1 ? p[0].as_int() : 0;
  const std::int64_t stop = p.size() > 1 ? p[1].as_int() : p[0].as_int();
  const std::int64_t step = p.size() > 2 ? p[2].as_int() : 1;
  if (step == 0) return error{"range() arg 3 must not be zero"};
  array out;
  for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<std::int64_t>(out.size()) == max_range) return error{"range too big"};
    out.emplace_back(i);
  }
  return value(std::move(out));
}

result<value> strftime_now(const call_args& args) {
  if (args.positional.size() != 1 || !args.positional[0].is_string())
    return error{"strftime_now expects one format string"};
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[256];
  const std::size_t n = std::strftime(buf, sizeof buf, args.positional[0].as_string().c_str(), &local);
  return value(std::string(buf, n));
}

}  // namespace

bool is_global_function(std::string_view name) {
  return name == "namespace" || name == "range" || name == "raise_exception" || name == "strftime_now";
}

result<value> call_global(std::string_view name, const call_args& args) {
  if (name == "namespace") return make_namespace(args);
  if (name == "range") return range(args);
  if (name == "strftime_now") return strftime_now(args);
  return error{"unknown function '" + std::string(name) + "'"};
}

}  // namespace troupe::jinja
