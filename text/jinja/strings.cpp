#include "text/jinja/strings.hpp"

#include "text/jinja/utf8.hpp"

namespace troupe::jinja::strings {
namespace {

bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
char to_upper(char c) { return is_lower(c) ? static_cast<char>(c - 32) : c; }
char to_lower(char c) { return is_upper(c) ? static_cast<char>(c + 32) : c; }
// Non-ASCII bytes count as cased letters so that "héllo".title() stays "Héllo".
bool is_cased(char c) { return is_lower(c) || is_upper(c) || static_cast<unsigned char>(c) >= 0x80; }

}  // namespace

std::string upper(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = to_upper(c);
  return out;
}

std::string lower(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = to_lower(c);
  return out;
}

std::string capitalize(const std::string& s) {
  std::string out = lower(s);
  if (!out.empty()) out[0] = to_upper(out[0]);
  return out;
}

std::string title(const std::string& s) {
  std::string out = s;
  bool previous_cased = false;
  for (char& c : out) {
    c = previous_cased ? to_lower(c) : to_upper(c);
    previous_cased = is_cased(c);
  }
  return out;
}

std::string jinja_title(const std::string& s) {
  std::string out;
  bool word_start = true;
  for (char c : s) {
    const bool separator =
        c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || utf8::is_space(static_cast<unsigned char>(c));
    out += separator ? c : word_start ? to_upper(c) : to_lower(c);
    word_start = separator;
  }
  return out;
}

std::string replace(const std::string& s, const std::string& old, const std::string& with, std::int64_t count) {
  std::string out;
  std::size_t pos = 0;
  if (old.empty()) {  // Python inserts `with` around every code point
    const std::vector<std::size_t> at = utf8::boundaries(s);
    for (std::size_t i = 0; i < at.size(); ++i) {
      if (count < 0 || static_cast<std::int64_t>(i) < count) out += with;
      if (i + 1 < at.size()) out += s.substr(at[i], at[i + 1] - at[i]);
    }
    return out;
  }
  for (std::int64_t n = 0; count < 0 || n < count; ++n) {
    const std::size_t hit = s.find(old, pos);
    if (hit == std::string::npos) break;
    out += s.substr(pos, hit - pos);
    out += with;
    pos = hit + old.size();
  }
  return out + s.substr(pos);
}

std::vector<std::string> split(const std::string& s, const std::optional<std::string>& sep, std::int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    std::size_t pos = 0;
    for (std::int64_t n = 0; maxsplit < 0 || n < maxsplit; ++n) {
      const std::size_t hit = s.find(*sep, pos);
      if (hit == std::string::npos) break;
      out.push_back(s.substr(pos, hit - pos));
      pos = hit + sep->size();
    }
    out.push_back(s.substr(pos));
    return out;
  }
  std::size_t pos = 0;
  auto skip_space = [&] {
    while (pos < s.size()) {
      std::size_t next = pos;
      if (!utf8::is_space(utf8::next(s, next))) break;
      pos = next;
    }
  };
  for (skip_space(); pos < s.size(); skip_space()) {
    if (maxsplit >= 0 && static_cast<std::int64_t>(out.size()) == maxsplit) {
      out.push_back(s.substr(pos));  // Python keeps the remainder's trailing whitespace
      break;
    }
    const std::size_t start = pos;
    while (pos < s.size()) {
      std::size_t next = pos;
      if (utf8::is_space(utf8::next(s, next))) break;
      pos = next;
    }
    out.push_back(s.substr(start, pos - start));
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace troupe::jinja::strings
