#include "text/jinja/to_string.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "text/jinja/utf8.hpp"

namespace troupe::jinja {
namespace {

void append_string_repr(std::string& out, const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const char quote = has_single && s.find('"') == std::string::npos ? '"' : '\'';
  out += quote;
  for (std::size_t pos = 0; pos < s.size();) {
    const char32_t cp = utf8::next(s, pos);
    char buf[8];
    if (cp == '\\' || cp == static_cast<char32_t>(quote)) {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0)) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      utf8::append(out, cp);
    }
  }
  out += quote;
}

// Namespaces are the one mutable value, so only they can hold themselves; `open` lists
// the ones being printed, and a repeat prints as {...}, as Python prints a looping dict.
void repr(std::string& out, const value& v, std::vector<const namespace_state*>& open) {
  switch (v.type()) {
    case value::kind::undefined:
      out += "Undefined";
      return;
    case value::kind::string:
      append_string_repr(out, v.as_string());
      return;
    case value::kind::array: {
      out += '[';
      for (std::size_t i = 0; i < v.as_array().size(); ++i) {
        if (i > 0) out += ", ";
        repr(out, v.as_array()[i], open);
      }
      out += ']';
      return;
    }
    case value::kind::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : v.as_object()) {
        if (!first) out += ", ";
        first = false;
        append_string_repr(out, key);
        out += ": ";
        repr(out, item, open);
      }
      out += '}';
      return;
    }
    case value::kind::name_space: {
      const namespace_state* ns = &v.as_namespace();
      if (std::find(open.begin(), open.end(), ns) != open.end()) {
        out += "<Namespace {...}>";
        return;
      }
      open.push_back(ns);
      out += "<Namespace ";
      repr(out, value(ns->attributes), open);
      out += '>';
      open.pop_back();
      return;
    }
    default:
      out += to_string(v);
  }
}

}  // namespace

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  std::string out = std::signbit(d) ? "-" : "";
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, std::fabs(d), std::chars_format::scientific);
  const std::string sci(buf, end);  // d[.ddd]e±XX, shortest round-trip digits
  const std::size_t e_pos = sci.find('e');
  std::string digits = sci.substr(0, e_pos);
  if (digits.size() > 1) digits.erase(1, 1);
  const int exp = std::stoi(sci.substr(e_pos + 1));
  if (exp < -4 || exp >= 16) {
    out += digits[0];
    if (digits.size() > 1) out.append(".").append(digits, 1);
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return out + e;
  }
  const int point = exp + 1;  // digits before the decimal point
  const auto width = static_cast<std::size_t>(std::abs(point));
  if (point <= 0) return out.append("0.").append(width, '0').append(digits);
  if (width >= digits.size()) return out.append(digits).append(width - digits.size(), '0').append(".0");
  return out.append(digits, 0, width).append(".").append(digits, width);
}

void append_repr(std::string& out, const value& v) {
  std::vector<const namespace_state*> open;
  repr(out, v, open);
}

std::string to_string(const value& v) {
  switch (v.type()) {
    case value::kind::undefined:
      return "";
    case value::kind::none:
      return "None";
    case value::kind::boolean:
      return v.as_bool() ? "True" : "False";
    case value::kind::integer:
      return std::to_string(v.as_int());
    case value::kind::floating:
      return float_repr(v.as_double());
    case value::kind::string:
      return v.as_string();
    case value::kind::array:
    case value::kind::object:
    case value::kind::name_space: {
      std::string out;
      append_repr(out, v);
      return out;
    }
    case value::kind::callable:
      return "<function>";
  }
  return "";
}

}  // namespace troupe::jinja
