#include "text/jinja/utf8.hpp"

namespace troupe::jinja::utf8 {

char32_t next(std::string_view s, std::size_t& pos) {
  const unsigned char lead = static_cast<unsigned char>(s[pos]);
  const int extra = lead >= 0xF8 ? 0 : lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
  if (extra == 0 || pos + extra >= s.size()) {
    ++pos;
    return lead;
  }
  char32_t cp = lead & (0x3F >> extra);
  for (int k = 1; k <= extra; ++k) {
    const unsigned char b = static_cast<unsigned char>(s[pos + k]);
    if ((b & 0xC0) != 0x80) {
      ++pos;
      return lead;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  pos += extra + 1;
  return cp;
}

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::size_t length(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t pos = 0; pos < s.size(); ++n) next(s, pos);
  return n;
}

std::vector<std::size_t> boundaries(std::string_view s) {
  std::vector<std::size_t> out;
  for (std::size_t pos = 0; pos < s.size();) {
    out.push_back(pos);
    next(s, pos);
  }
  out.push_back(s.size());
  return out;
}

bool is_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

namespace {

bool strippable(char32_t cp, const std::string* chars) {
  if (!chars) return is_space(cp);
  for (std::size_t pos = 0; pos < chars->size();)
    if (next(*chars, pos) == cp) return true;
  return false;
}

}  // namespace

std::string_view strip(std::string_view s, side which, const std::string* chars) {
  std::size_t begin = 0;
  if (which != side::right) {
    while (begin < s.size()) {
      std::size_t pos = begin;
      if (!strippable(next(s, pos), chars)) break;
      begin = pos;
    }
  }
  std::size_t end = s.size();
  if (which != side::left) {
    while (end > begin) {
      // The last code point: back up over at most three continuation bytes.
      std::size_t start = end - 1;
      while (start > begin && end - start < 4 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
      std::size_t pos = start;
      char32_t cp = next(s, pos);
      if (pos != end) {  // no well-formed sequence ends there: take the last byte alone
        start = end - 1;
        cp = static_cast<unsigned char>(s[start]);
      }
      if (!strippable(cp, chars)) break;
      end = start;
    }
  }
  return s.substr(begin, end - begin);
}

}  // namespace troupe::jinja::utf8
