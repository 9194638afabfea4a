#include "base/utf8.hpp"

#include <cstdint>
#include <cstring>

namespace troupe {
namespace {

enum class scan { valid, invalid, truncated };

struct sequence {
  scan kind;
  size_t length;  // of the character, or of the maximal ill-formed subpart
};

// One sequence at text[at] by the table of well-formed byte sequences (Unicode 3-7).
sequence scan_at(std::string_view text, size_t at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  if (lead < 0x80) return {scan::valid, 1};
  size_t trail = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the first trail byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    trail = 1;
  } else if (lead == 0xE0) {
    trail = 2, low = 0xA0;
  } else if (lead == 0xED) {
    trail = 2, high = 0x9F;  // no surrogates
  } else if (lead >= 0xE1 && lead <= 0xEF) {
    trail = 2;
  } else if (lead == 0xF0) {
    trail = 3, low = 0x90;
  } else if (lead == 0xF4) {
    trail = 3, high = 0x8F;  // nothing past U+10FFFF
  } else if (lead >= 0xF1 && lead <= 0xF3) {
    trail = 3;
  } else {
    return {scan::invalid, 1};
  }
  for (size_t i = 1; i <= trail; ++i) {
    if (at + i >= text.size()) return {scan::truncated, i};
    const auto b = static_cast<unsigned char>(text[at + i]);
    if (b < low || b > high) return {scan::invalid, i};
    low = 0x80, high = 0xBF;
  }
  return {scan::valid, trail + 1};
}

bool ascii_word(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  return (w & 0x8080808080808080ull) == 0;
}

}  // namespace

size_t find_invalid_utf8(std::string_view text) {
  size_t at = 0;
  while (at < text.size()) {
    if (at + 8 <= text.size() && ascii_word(text.data() + at)) {
      at += 8;
      continue;
    }
    const sequence s = scan_at(text, at);
    if (s.kind != scan::valid) return at;
    at += s.length;
  }
  return std::string_view::npos;
}

char32_t next_code_point(std::string_view text, size_t& at) {
  const auto b = [&](size_t i) { return char32_t(static_cast<unsigned char>(text[at + i])); };
  const char32_t lead = b(0);
  char32_t cp;
  if (lead < 0x80) {
    cp = lead, at += 1;
  } else if (lead < 0xE0) {
    cp = (lead & 0x1F) << 6 | (b(1) & 0x3F), at += 2;
  } else if (lead < 0xF0) {
    cp = (lead & 0x0F) << 12 | (b(1) & 0x3F) << 6 | (b(2) & 0x3F), at += 3;
  } else {
    cp = (lead & 0x07) << 18 | (b(1) & 0x3F) << 12 | (b(2) & 0x3F) << 6 | (b(3) & 0x3F), at += 4;
  }
  return cp;
}

void append_utf8(char32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | cp >> 6);
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | cp >> 12);
    out += char(0x80 | (cp >> 6 & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | cp >> 18);
    out += char(0x80 | (cp >> 12 & 0x3F));
    out += char(0x80 | (cp >> 6 & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

size_t append_utf8_lossy(std::string_view bytes, std::string& out, bool final) {
  size_t at = 0, run = 0;  // bytes[run, at) are well-formed and not yet copied
  while (at < bytes.size()) {
    const sequence s = scan_at(bytes, at);
    if (s.kind == scan::valid) {
      at += s.length;
      continue;
    }
    out.append(bytes.substr(run, at - run));
    if (s.kind == scan::truncated && !final) return at;
    out += "\xEF\xBF\xBD";
    at += s.length;
    run = at;
  }
  out.append(bytes.substr(run, at - run));
  return at;
}

}  // namespace troupe
