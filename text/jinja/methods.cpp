#include "text/jinja/methods.hpp"

#include <algorithm>
#include <charconv>

#include "text/jinja/operators.hpp"
#include "text/jinja/strings.hpp"
#include "text/jinja/to_string.hpp"
#include "text/jinja/utf8.hpp"

namespace troupe::jinja {
namespace {

constexpr std::string_view string_methods[] = {"capitalize", "endswith", "format",     "lower", "lstrip", "replace",
                                               "rstrip",     "split",    "startswith", "strip", "title",  "upper"};
constexpr std::string_view dict_methods[] = {"get", "items", "keys", "values"};

bool listed(std::string_view name, const auto& names) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

// startswith / endswith with a string or a tuple of strings.
result<value> affix(const std::string& s, std::string_view name, const call_args& args) {
  if (status st = args.accept(name, {"prefix"}); !st) return st.err();
  const value* arg = args.get(0, "prefix");
  if (!arg) return error{std::string(name) + "() takes at least 1 argument"};
  const auto test = [&](const value& a) -> result<bool> {
    if (!a.is_string())
      return error{std::string(name) + " first arg must be str or a tuple of str, not " + type_name(a)};
    const std::string& p = a.as_string();
    if (p.size() > s.size()) return false;
    return name == "startswith" ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0;
  };
  if (!arg->is_array()) {
    result<bool> r = test(*arg);
    if (!r) return r.err();
    return value(*r);
  }
  for (const value& a : arg->as_array()) {
    result<bool> r = test(a);
    if (!r) return r.err();
    if (*r) return value(true);
  }
  return value(false);
}

// str.format with `{}`, `{0}` and `{name}` fields; format specs are not supported.
result<value> format(const std::string& s, const call_args& args) {
  std::string out;
  std::size_t next_auto = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if ((c == '{' || c == '}') && i + 1 < s.size() && s[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '}') return error{"Single '}' encountered in format string"};
    if (c != '{') {
      out += c;
      continue;
    }
    const std::size_t close = s.find('}', i);
    if (close == std::string::npos) return error{"Single '{' encountered in format string"};
    const std::string field = s.substr(i + 1, close - i - 1);
    i = close;
    if (field.find_first_of(":!.[") != std::string::npos)
      return error{"format field '{" + field + "}' is not supported"};
    std::size_t index = 0;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), index);
    const bool numbered = ec == std::errc() && end == field.data() + field.size();
    const value* arg = nullptr;
    if (field.empty()) {
      arg = next_auto < args.positional.size() ? &args.positional[next_auto] : nullptr;
      ++next_auto;
    } else if (numbered) {
      arg = index < args.positional.size() ? &args.positional[index] : nullptr;
    } else {
      arg = args.get(args.positional.size(), field);  // past the positionals: by keyword only
    }
    if (!arg) return error{"format: no argument for '{" + field + "}'"};
    out += to_string(*arg);
  }
  return value(std::move(out));
}

result<value> string_method(const std::string& s, std::string_view name, const call_args& args) {
  if (name == "startswith" || name == "endswith") return affix(s, name, args);
  if (name == "format") return format(s, args);
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    if (status st = args.accept(name, {"chars"}); !st) return st.err();
    const value* chars = args.get(0, "chars");
    const utf8::side side = name == "lstrip"   ? utf8::side::left
                            : name == "rstrip" ? utf8::side::right
                                               : utf8::side::both;
    if (chars && !chars->is_none() && !chars->is_string()) return error{std::string(name) + " arg must be None or str"};
    return value(utf8::strip(s, side, chars && chars->is_string() ? &chars->as_string() : nullptr));
  }
  if (name == "split") {
    if (status st = args.accept("split", {"sep", "maxsplit"}); !st) return st.err();
    const value* sep = args.get(0, "sep");
    const value* maxsplit = args.get(1, "maxsplit");
    if (sep && !sep->is_none() && !sep->is_string()) return error{"split: must be str or None, not " + type_name(*sep)};
    if (sep && sep->is_string() && sep->as_string().empty()) return error{"split: empty separator"};
    std::optional<std::string> separator;
    if (sep && sep->is_string()) separator = sep->as_string();
    array out;
    for (std::string& part : strings::split(s, separator, maxsplit && maxsplit->is_int() ? maxsplit->as_int() : -1))
      out.emplace_back(std::move(part));
    return value(std::move(out));
  }
  if (name == "replace") {
    if (status st = args.accept("replace", {"old", "new", "count"}); !st) return st.err();
    const value* old = args.get(0, "old");
    const value* with = args.get(1, "new");
    const value* count = args.get(2, "count");
    if (!old || !with || !old->is_string() || !with->is_string()) return error{"replace() needs two strings"};
    return value(
        strings::replace(s, old->as_string(), with->as_string(), count && count->is_int() ? count->as_int() : -1));
  }
  if (status st = args.accept(name, {}); !st) return st.err();
  if (name == "upper") return value(strings::upper(s));
  if (name == "lower") return value(strings::lower(s));
  if (name == "title") return value(strings::title(s));
  return value(strings::capitalize(s));
}

result<value> dict_method(const object& o, std::string_view name, const call_args& args) {
  if (name == "get") {
    if (status st = args.accept("get", {"key", "default"}); !st) return st.err();
    const value* key = args.get(0, "key");
    const value* fallback = args.get(1, "default");
    if (!key) return error{"get expected at least 1 argument, got 0"};
    const value* found = key->is_string() ? o.find(key->as_string()) : nullptr;
    return found ? *found : fallback ? *fallback : value(nullptr);
  }
  if (status st = args.accept(name, {}); !st) return st.err();
  array out;
  for (const auto& [key, item] : o) {
    if (name == "keys")
      out.emplace_back(key);
    else if (name == "values")
      out.push_back(item);
    else
      out.emplace_back(array{value(key), item});
  }
  return value(std::move(out));
}

}  // namespace

bool is_method(std::string_view name) { return listed(name, string_methods) || listed(name, dict_methods); }

bool has_method(const value& self, std::string_view name) {
  return (self.is_string() && listed(name, string_methods)) || (self.is_object() && listed(name, dict_methods));
}

result<value> call_method(const value& self, std::string_view name, const call_args& args) {
  if (self.is_string() && listed(name, string_methods)) return string_method(self.as_string(), name, args);
  if (self.is_object() && listed(name, dict_methods)) return dict_method(self.as_object(), name, args);
  return error{quoted(type_name(self)) + " object has no attribute " + quoted(name)};
}

}  // namespace troupe::jinja
