#include "text/jinja/to_json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "text/jinja/to_string.hpp"
#include "text/jinja/utf8.hpp"

namespace troupe::jinja {
namespace {

void append_hex_escape(std::string& out, unsigned unit) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\u%04x", unit);
  out += buf;
}

void append_json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (std::size_t pos = 0; pos < s.size();) {
    // Copy the run that needs no escaping in one go.
    std::size_t run = pos;
    while (run < s.size()) {
      const unsigned char c = static_cast<unsigned char>(s[run]);
      if (c < 0x20 || c == '"' || c == '\\' || (ensure_ascii && c >= 0x7F)) break;
      ++run;
    }
    out.append(s, pos, run - pos);
    if ((pos = run) == s.size()) break;
    const char32_t cp = utf8::next(s, pos);
    switch (cp) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (cp < 0x20 || (ensure_ascii && cp >= 0x7F && cp < 0x10000)) {
      append_hex_escape(out, cp);
    } else if (ensure_ascii && cp >= 0x10000) {
      const char32_t v = cp - 0x10000;
      append_hex_escape(out, 0xD800 + (v >> 10));
      append_hex_escape(out, 0xDC00 + (v & 0x3FF));
    } else {
      utf8::append(out, cp);
    }
  }
  out += '"';
}

class json_writer {
 public:
  explicit json_writer(const json_options& o)
      : o_(o), item_sep_(o.item_separator.value_or(o.indent ? "," : ", ")), key_sep_(o.key_separator.value_or(": ")) {}

  status write(const value& v, int depth) {
    switch (v.type()) {
      case value::kind::none:
        out_ += "null";
        return ok();
      case value::kind::boolean:
        out_ += v.as_bool() ? "true" : "false";
        return ok();
      case value::kind::integer:
        out_ += std::to_string(v.as_int());
        return ok();
      case value::kind::floating:
        write_double(v.as_double());
        return ok();
      case value::kind::string:
        append_json_string(out_, v.as_string(), o_.ensure_ascii);
        return ok();
      case value::kind::array:
        return write_array(v.as_array(), depth);
      case value::kind::object:
        return write_object(v.as_object(), depth);
      case value::kind::undefined:
        return error{"Object of type Undefined is not JSON serializable"};
      case value::kind::name_space:
        return error{"Object of type Namespace is not JSON serializable"};
      case value::kind::callable:
        return error{"Object of type function is not JSON serializable"};
    }
    return ok();
  }
  std::string& text() { return out_; }

 private:
  void write_double(double d) {
    if (std::isnan(d))
      out_ += "NaN";
    else if (std::isinf(d))
      out_ += d < 0 ? "-Infinity" : "Infinity";
    else
      out_ += float_repr(d);
  }
  void newline(int depth) {
    if (!o_.indent) return;
    out_ += '\n';
    out_.append(static_cast<std::size_t>(*o_.indent) * depth, ' ');
  }
  status write_array(const array& a, int depth) {
    if (a.empty()) {
      out_ += "[]";
      return ok();
    }
    out_ += '[';
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (i > 0) out_ += item_sep_;
      newline(depth + 1);
      if (status s = write(a[i], depth + 1); !s) return s;
    }
    newline(depth);
    out_ += ']';
    return ok();
  }
  status write_object(const object& obj, int depth) {
    if (obj.empty()) {
      out_ += "{}";
      return ok();
    }
    std::vector<const object::entry*> entries;
    for (const object::entry& e : obj) entries.push_back(&e);
    if (o_.sort_keys) std::sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
    out_ += '{';
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (i > 0) out_ += item_sep_;
      newline(depth + 1);
      append_json_string(out_, entries[i]->first, o_.ensure_ascii);
      out_ += key_sep_;
      if (status s = write(entries[i]->second, depth + 1); !s) return s;
    }
    newline(depth);
    out_ += '}';
    return ok();
  }

  const json_options& o_;
  std::string item_sep_;
  std::string key_sep_;
  std::string out_;
};

}  // namespace

result<std::string> to_json(const value& v, const json_options& options) {
  json_writer writer(options);
  if (status s = writer.write(v, 0); !s) return s.err();
  return std::move(writer.text());
}

}  // namespace troupe::jinja
