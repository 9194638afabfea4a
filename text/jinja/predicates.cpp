#include "text/jinja/predicates.hpp"

#include <algorithm>
#include <cmath>

#include "text/jinja/operators.hpp"
#include "text/jinja/to_string.hpp"

namespace troupe::jinja {
namespace {

using kind = value::kind;

result<bool> parity(std::string_view name, const value& v) {
  double x;
  if (v.is_int() || v.is_bool())
    x = static_cast<double>(v.is_int() ? v.as_int() : v.as_bool());
  else if (v.is_double())
    x = v.as_double();
  else
    return error{"test " + std::string(name) + " needs a number, got '" + type_name(v) + "'"};
  double rest = std::fmod(x, 2.0);  // Python's x % 2, which is never negative
  if (rest < 0) rest += 2.0;
  return rest == (name == "odd" ? 1.0 : 0.0);
}

// str.islower() / isupper(): some cased letter, and none of the other case.
bool has_case(const std::string& s, bool lower) {
  bool cased = false;
  for (char c : s) {
    if (c >= 'a' && c <= 'z') {
      if (!lower) return false;
      cased = true;
    } else if (c >= 'A' && c <= 'Z') {
      if (lower) return false;
      cased = true;
    }
  }
  return cased;
}

}  // namespace

bool is_test(std::string_view name) {
  static constexpr std::string_view names[] = {"boolean",  "callable", "defined", "divisibleby", "eq",      "equalto",
                                               "even",     "false",    "float",   "in",          "integer", "iterable",
                                               "lower",    "mapping",  "ne",      "none",        "number",  "odd",
                                               "sequence", "string",   "true",    "undefined",   "upper"};
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

result<bool> apply_test(std::string_view name, const value& v, const call_args& args) {
  if (name == "eq" || name == "equalto" || name == "ne" || name == "in" || name == "divisibleby") {
    if (status s = args.accept(name, {"other"}); !s) return s.err();
    const value* other = args.get(0, "other");
    if (!other) return error{"test " + std::string(name) + " needs an argument"};
    if (name == "in") return contains(*other, v);
    if (name == "divisibleby") {
      result<value> rest = apply_binary("%", v, *other);
      if (!rest) return rest.err();
      return equals(*rest, value(0));
    }
    return equals(v, *other) == (name != "ne");
  }
  if (status s = args.accept(name, {}); !s) return s.err();
  const kind k = v.type();
  if (name == "defined") return k != kind::undefined;
  if (name == "undefined") return k == kind::undefined;
  if (name == "none") return k == kind::none;
  if (name == "boolean") return k == kind::boolean;
  if (name == "true") return k == kind::boolean && v.as_bool();
  if (name == "false") return k == kind::boolean && !v.as_bool();
  if (name == "string") return k == kind::string;
  if (name == "mapping") return k == kind::object;
  if (name == "number") return k == kind::integer || k == kind::floating || k == kind::boolean;
  if (name == "integer") return k == kind::integer;
  if (name == "float") return k == kind::floating;
  if (name == "callable") return k == kind::callable;
  // jinja2 asks Python: undefined iterates as empty and has a length, so it passes both.
  if (name == "iterable" || name == "sequence")
    return k == kind::string || k == kind::array || k == kind::object || k == kind::undefined;
  if (name == "odd" || name == "even") return parity(name, v);
  if (name == "lower" || name == "upper") return has_case(to_string(v), name == "lower");
  return error{"unknown test '" + std::string(name) + "'"};
}

}  // namespace troupe::jinja
