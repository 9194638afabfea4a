#include "text/jinja/filters.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "text/jinja/operators.hpp"
#include "text/jinja/strings.hpp"
#include "text/jinja/to_json.hpp"
#include "text/jinja/to_string.hpp"
#include "text/jinja/utf8.hpp"

namespace troupe::jinja {
namespace {

// Whether int(d) fits: Python's ints are unbounded, troupe's are 64-bit.
bool fits_int64(double d) { return std::isfinite(d) && std::fabs(d) < 9.2e18; }

error bad_type(std::string_view filter, const value& v) {
  return error{"filter " + std::string(filter) + " cannot take a value of type '" + type_name(v) + "'"};
}

result<array> iterate(std::string_view filter, const value& v) {
  std::optional<array> items = jinja::iterate(v);
  if (!items) return bad_type(filter, v);
  return std::move(*items);
}

result<value> tojson(const value& v, const call_args& args) {
  if (status s = args.accept("tojson", {"ensure_ascii", "indent", "separators", "sort_keys"}); !s) return s.err();
  json_options o;
  if (const value* a = args.get(0, "ensure_ascii")) o.ensure_ascii = truthy(*a);
  if (const value* a = args.get(1, "indent"); a && !a->is_none()) {
    if (!a->is_int()) return error{"tojson indent must be an integer"};
    o.indent = static_cast<int>(a->as_int());
  }
  if (const value* a = args.get(2, "separators"); a && !a->is_none()) {
    if (!a->is_array() || a->as_array().size() != 2 || !a->as_array()[0].is_string() || !a->as_array()[1].is_string())
      return error{"tojson separators must be two strings"};
    o.item_separator = a->as_array()[0].as_string();
    o.key_separator = a->as_array()[1].as_string();
  }
  if (const value* a = args.get(3, "sort_keys")) o.sort_keys = truthy(*a);
  result<std::string> text = to_json(v, o);
  if (!text) return text.err();
  return value(std::move(text).value());
}

// jinja2's int filter: int(s, base), else int(float(s)), else the default.
result<value> to_int(const value& v, const call_args& args) {
  if (status s = args.accept("int", {"default", "base"}); !s) return s.err();
  const value* fallback = args.get(0, "default");
  const value* base_arg = args.get(1, "base");
  const std::int64_t base = base_arg && base_arg->is_int() ? base_arg->as_int() : 10;
  if (base < 2 || base > 36) return error{"int base must be between 2 and 36"};
  const value otherwise = fallback ? *fallback : value(0);
  if (v.is_int()) return v;
  if (v.is_bool()) return value(v.as_bool() ? 1 : 0);
  if (v.is_double()) return fits_int64(v.as_double()) ? value(static_cast<std::int64_t>(v.as_double())) : otherwise;
  if (!v.is_string()) return otherwise;
  std::string text(utf8::strip(v.as_string(), utf8::side::both));
  if (base == 16 && (text.rfind("0x", 0) == 0 || text.rfind("0X", 0) == 0)) text.erase(0, 2);
  std::int64_t i = 0;
  const char* first = text.data() + (!text.empty() && text[0] == '+');
  if (!text.empty() &&
      std::from_chars(first, text.data() + text.size(), i, static_cast<int>(base)).ptr == text.data() + text.size())
    return value(i);
  char* end = nullptr;
  const double d = std::strtod(text.c_str(), &end);
  if (!text.empty() && end == text.c_str() + text.size() && fits_int64(d)) return value(static_cast<std::int64_t>(d));
  return otherwise;
}

result<value> to_float(const value& v, const call_args& args) {
  if (status s = args.accept("float", {"default"}); !s) return s.err();
  const value* fallback = args.get(0, "default");
  if (v.is_double()) return v;
  if (v.is_int() || v.is_bool()) return value(static_cast<double>(v.is_int() ? v.as_int() : v.as_bool()));
  if (v.is_string()) {
    const std::string text(utf8::strip(v.as_string(), utf8::side::both));
    char* end = nullptr;
    const double d = std::strtod(text.c_str(), &end);
    if (!text.empty() && end == text.c_str() + text.size()) return value(d);
  }
  return fallback ? *fallback : value(0.0);
}

result<value> join(const value& v, const call_args& args) {
  if (status s = args.accept("join", {"d", "attribute"}); !s) return s.err();
  const value* sep = args.get(0, "d");
  const value* attribute = args.get(1, "attribute");
  result<array> items = iterate("join", v);
  if (!items) return items.err();
  std::string out;
  for (std::size_t i = 0; i < items->size(); ++i) {
    if (i > 0 && sep) out += to_string(*sep);
    const value& item = (*items)[i];
    if (attribute && attribute->is_string() && item.is_object()) {
      const value* field = item.as_object().find(attribute->as_string());
      out += field ? to_string(*field) : "";
    } else {
      out += to_string(item);
    }
  }
  return value(std::move(out));
}

result<value> length(const value& v) {
  switch (v.type()) {
    case value::kind::undefined:
      return value(0);
    case value::kind::string:
      return value(utf8::length(v.as_string()));
    case value::kind::array:
      return value(v.as_array().size());
    case value::kind::object:
      return value(v.as_object().size());
    default:
      return error{"object of type '" + type_name(v) + "' has no len()"};
  }
}

result<value> items(const value& v) {
  if (v.is_undefined()) return value(array{});
  if (!v.is_object()) return error{"Can only get item pairs from a mapping, got '" + type_name(v) + "'"};
  array out;
  for (const auto& [key, item] : v.as_object()) out.emplace_back(array{value(key), item});
  return value(std::move(out));
}

result<value> first_or_last(std::string_view name, const value& v) {
  result<array> all = iterate(name, v);
  if (!all) return all.err();
  if (all->empty()) return value();
  return name == "first" ? all->front() : all->back();
}

result<value> reverse(const value& v) {
  result<array> all = iterate("reverse", v);
  if (!all) return all.err();
  std::reverse(all->begin(), all->end());
  if (!v.is_string()) return value(std::move(*all));
  std::string out;
  for (const value& c : *all) out += c.as_string();
  return value(std::move(out));
}

result<value> abs_value(const value& v) {
  if (v.is_double()) return value(std::fabs(v.as_double()));
  if (v.is_int() || v.is_bool()) return apply_unary(v.is_int() && v.as_int() < 0 ? "-" : "+", v);
  return bad_type("abs", v);
}

}  // namespace

bool is_filter(std::string_view name) {
  static constexpr std::string_view names[] = {"abs",    "capitalize", "count", "d",      "default", "e",
                                               "escape", "first",      "float", "int",    "items",   "join",
                                               "last",   "length",     "list",  "lower",  "replace", "reverse",
                                               "safe",   "string",     "title", "tojson", "trim",    "upper"};
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

result<value> apply_filter(std::string_view name, const value& v, const call_args& args) {
  // Python's int() and float() of an undefined value raise, so these filters fail on it.
  if ((name == "int" || name == "float") && v.is_undefined())
    return error{"filter " + std::string(name) + " got an undefined value"};
  if (name == "tojson") return tojson(v, args);
  if (name == "int") return to_int(v, args);
  if (name == "float") return to_float(v, args);
  if (name == "join") return join(v, args);
  if (name == "default" || name == "d") {
    if (status s = args.accept(name, {"default_value", "boolean"}); !s) return s.err();
    const value* fallback = args.get(0, "default_value");
    const value* boolean = args.get(1, "boolean");
    const bool use_default = v.is_undefined() || (boolean && truthy(*boolean) && !truthy(v));
    return use_default ? (fallback ? *fallback : value("")) : v;
  }
  if (name == "replace") {
    if (status s = args.accept("replace", {"old", "new", "count"}); !s) return s.err();
    const value* old = args.get(0, "old");
    const value* with = args.get(1, "new");
    const value* count = args.get(2, "count");
    if (!old || !with) return error{"replace needs the old and the new string"};
    const std::int64_t n = count && count->is_int() ? count->as_int() : -1;
    return value(strings::replace(to_string(v), to_string(*old), to_string(*with), n));
  }
  if (name == "trim") {
    if (status s = args.accept("trim", {"chars"}); !s) return s.err();
    const value* chars = args.get(0, "chars");
    const std::string text = to_string(v);
    const std::string* set = chars && chars->is_string() ? &chars->as_string() : nullptr;
    return value(utf8::strip(text, utf8::side::both, set));
  }
  if (status s = args.accept(name, {}); !s) return s.err();
  if (name == "safe") return v.is_string() ? v : value(to_string(v));  // Markup(str(v))
  if (name == "string") return value(to_string(v));
  if (name == "length" || name == "count") return length(v);
  if (name == "items") return items(v);
  if (name == "first" || name == "last") return first_or_last(name, v);
  if (name == "reverse") return reverse(v);
  if (name == "abs") return abs_value(v);
  if (name == "upper") return value(strings::upper(to_string(v)));
  if (name == "lower") return value(strings::lower(to_string(v)));
  if (name == "capitalize") return value(strings::capitalize(to_string(v)));
  if (name == "title") return value(strings::jinja_title(to_string(v)));
  if (name == "e" || name == "escape") return value(strings::html_escape(to_string(v)));
  if (name == "list") {
    result<array> all = iterate("list", v);
    if (!all) return all.err();
    return value(std::move(all).value());
  }
  return error{"unknown filter '" + std::string(name) + "'"};
}

}  // namespace troupe::jinja
