#include "text/jinja/operators.hpp"

#include <cmath>

#include "text/jinja/to_string.hpp"
#include "text/jinja/utf8.hpp"

namespace troupe::jinja {
namespace {

// A bound on `'x' * n` and `[x] * n`, far above what a prompt needs.
constexpr std::uint64_t max_repeat = std::uint64_t{1} << 26;

bool is_number(const value& v) { return v.is_int() || v.is_double() || v.is_bool(); }
std::int64_t int_of(const value& v) { return v.is_bool() ? v.as_bool() : v.as_int(); }
double double_of(const value& v) { return v.is_double() ? v.as_double() : static_cast<double>(int_of(v)); }

error unsupported(std::string_view op, const value& a, const value& b) {
  return error{"unsupported operand types for " + std::string(op) + ": '" + type_name(a) + "' and '" + type_name(b) +
               "'"};
}

result<value> integer_arithmetic(std::string_view op, std::int64_t a, std::int64_t b) {
  std::int64_t out = 0;
  bool overflow = false;
  if (op == "+") {
    overflow = __builtin_add_overflow(a, b, &out);
  } else if (op == "-") {
    overflow = __builtin_sub_overflow(a, b, &out);
  } else if (op == "*") {
    overflow = __builtin_mul_overflow(a, b, &out);
  } else if (op == "/") {
    if (b == 0) return error{"division by zero"};
    return value(static_cast<double>(a) / static_cast<double>(b));
  } else if (op == "//" || op == "%") {
    if (b == 0) return error{op == "//" ? "integer division by zero" : "integer modulo by zero"};
    std::int64_t q = a / b, r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) {  // Python rounds the quotient toward -infinity
      --q;
      r += b;
    }
    out = op == "//" ? q : r;
  } else if (op == "**") {
    if (b < 0) return value(std::pow(static_cast<double>(a), static_cast<double>(b)));
    out = 1;
    for (std::int64_t base = a, e = b; e > 0 && !overflow; e >>= 1) {
      if (e & 1) overflow = __builtin_mul_overflow(out, base, &out);
      if (e > 1) overflow = overflow || __builtin_mul_overflow(base, base, &base);
    }
  }
  if (overflow) return error{"integer overflow in " + std::string(op)};
  return value(out);
}

result<value> float_arithmetic(std::string_view op, double a, double b) {
  if (op == "+") return value(a + b);
  if (op == "-") return value(a - b);
  if (op == "*") return value(a * b);
  if (op == "**") return value(std::pow(a, b));
  if (b == 0) return error{"float division by zero"};
  if (op == "/") return value(a / b);
  if (op == "//") return value(std::floor(a / b));
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return value(r);
}

result<value> repeat(const value& seq, std::int64_t n) {
  const std::size_t size = seq.is_string() ? seq.as_string().size() : seq.as_array().size();
  if (n > 0 && size > 0 && static_cast<std::uint64_t>(n) > max_repeat / size)
    return error{"repeated sequence would be too long"};
  if (seq.is_string()) {
    std::string out;
    for (std::int64_t i = 0; i < n; ++i) out += seq.as_string();
    return value(std::move(out));
  }
  array out;
  for (std::int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.as_array().begin(), seq.as_array().end());
  return value(std::move(out));
}

// -1, 0, 1 for a < b, a == b, a > b, or an error when Python cannot order them.
result<int> order(std::string_view op, const value& a, const value& b) {
  if (is_number(a) && is_number(b)) {
    if (!a.is_double() && !b.is_double()) return int_of(a) < int_of(b) ? -1 : int_of(a) > int_of(b) ? 1 : 0;
    const double x = double_of(a), y = double_of(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.as_string().compare(b.as_string());  // UTF-8 byte order is code point order
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_array() && b.is_array()) {
    const array &x = a.as_array(), &y = b.as_array();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals(x[i], y[i])) continue;
      return order(op, x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  return error{quoted(op) + " not supported between instances of '" + type_name(a) + "' and '" + type_name(b) + "'"};
}

}  // namespace

bool truthy(const value& v) {
  switch (v.type()) {
    case value::kind::undefined:
    case value::kind::none:
      return false;
    case value::kind::boolean:
      return v.as_bool();
    case value::kind::integer:
      return v.as_int() != 0;
    case value::kind::floating:
      return v.as_double() != 0;
    case value::kind::string:
      return !v.as_string().empty();
    case value::kind::array:
      return !v.as_array().empty();
    case value::kind::object:
      return !v.as_object().empty();
    case value::kind::name_space:
    case value::kind::callable:
      return true;
  }
  return false;
}

bool equals(const value& a, const value& b) {
  if (is_number(a) && is_number(b)) {
    if (!a.is_double() && !b.is_double()) return int_of(a) == int_of(b);
    return double_of(a) == double_of(b);
  }
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case value::kind::undefined:
    case value::kind::none:
      return true;
    case value::kind::string:
      return a.as_string() == b.as_string();
    case value::kind::array: {
      const array &x = a.as_array(), &y = b.as_array();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (!equals(x[i], y[i])) return false;
      return true;
    }
    case value::kind::object: {
      const object &x = a.as_object(), &y = b.as_object();
      if (x.size() != y.size()) return false;
      for (const auto& [key, item] : x) {
        const value* other = y.find(key);
        if (!other || !equals(item, *other)) return false;
      }
      return true;
    }
    case value::kind::name_space:
      return &a.as_namespace() == &b.as_namespace();
    case value::kind::callable:
      return &a.as_callable() == &b.as_callable();
    default:
      return false;
  }
}

std::string quoted(std::string_view s) { return std::string(1, '\'').append(s).append(1, '\''); }

std::string type_name(const value& v) {
  switch (v.type()) {
    case value::kind::undefined:
      return "Undefined";
    case value::kind::none:
      return "NoneType";
    case value::kind::boolean:
      return "bool";
    case value::kind::integer:
      return "int";
    case value::kind::floating:
      return "float";
    case value::kind::string:
      return "str";
    case value::kind::array:
      return "list";
    case value::kind::object:
      return "dict";
    case value::kind::name_space:
      return "Namespace";
    case value::kind::callable:
      return "function";
  }
  return "?";
}

result<bool> contains(const value& container, const value& item) {
  switch (container.type()) {
    case value::kind::undefined:
      return false;
    case value::kind::string:
      if (!item.is_string()) return error{"'in <string>' requires string as left operand, not " + type_name(item)};
      return container.as_string().find(item.as_string()) != std::string::npos;
    case value::kind::array:
      for (const value& x : container.as_array())
        if (equals(x, item)) return true;
      return false;
    case value::kind::object:
      if (item.is_array() || item.is_object()) return error{"unhashable type: " + quoted(type_name(item))};
      return item.is_string() && container.as_object().contains(item.as_string());
    default:
      return error{"argument of type '" + type_name(container) + "' is not iterable"};
  }
}

std::optional<array> iterate(const value& v) {
  switch (v.type()) {
    case value::kind::undefined:
      return array{};
    case value::kind::array:
      return v.as_array();
    case value::kind::object: {
      array keys;
      for (const auto& [key, item] : v.as_object()) keys.emplace_back(key);
      return keys;
    }
    case value::kind::string: {
      array chars;
      const std::string& s = v.as_string();
      const std::vector<std::size_t> at = utf8::boundaries(s);
      for (std::size_t i = 0; i + 1 < at.size(); ++i) chars.emplace_back(s.substr(at[i], at[i + 1] - at[i]));
      return chars;
    }
    default:
      return std::nullopt;
  }
}

result<value> apply_binary(std::string_view op, const value& a, const value& b) {
  if (op == "==") return value(equals(a, b));
  if (op == "!=") return value(!equals(a, b));
  if (op == "~") return value(to_string(a) + to_string(b));
  if (op == "in" || op == "not in") {
    result<bool> found = contains(b, a);
    if (!found) return found.err();
    return value(*found != (op == "not in"));
  }
  if (op == "<" || op == ">" || op == "<=" || op == ">=") {
    result<int> c = order(op, a, b);
    if (!c) return c.err();
    return value(op == "<" ? *c < 0 : op == ">" ? *c > 0 : op == "<=" ? *c <= 0 : *c >= 0);
  }
  if (is_number(a) && is_number(b)) {
    if (a.is_double() || b.is_double()) return float_arithmetic(op, double_of(a), double_of(b));
    return integer_arithmetic(op, int_of(a), int_of(b));
  }
  if (op == "+" && a.is_string() && b.is_string()) return value(a.as_string() + b.as_string());
  if (op == "+" && a.is_array() && b.is_array()) {
    array out = a.as_array();
    out.insert(out.end(), b.as_array().begin(), b.as_array().end());
    return value(std::move(out));
  }
  if (op == "*" && (a.is_string() || a.is_array()) && (b.is_int() || b.is_bool())) return repeat(a, int_of(b));
  if (op == "*" && (b.is_string() || b.is_array()) && (a.is_int() || a.is_bool())) return repeat(b, int_of(a));
  return unsupported(op, a, b);
}

result<value> apply_unary(std::string_view op, const value& v) {
  if (v.is_double()) return value(op == "-" ? -v.as_double() : v.as_double());
  if (v.is_int() || v.is_bool())
    return op == "-" ? integer_arithmetic("-", 0, int_of(v)) : result<value>(value(int_of(v)));
  return error{"bad operand type for unary " + std::string(op) + ": '" + type_name(v) + "'"};
}

}  // namespace troupe::jinja
