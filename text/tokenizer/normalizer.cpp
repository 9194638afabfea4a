#include "text/tokenizer/normalizer.hpp"

#include <cstdlib>

#include <utf8proc.h>

#include "base/check.hpp"
#include "base/utf8.hpp"
#include "text/tokenizer/json_fields.hpp"

namespace troupe {
namespace {

using json = nlohmann::json;

// Whether every character of `text` is below `limit` (at most U+0800), judged by its
// lead bytes alone.
bool all_below(std::string_view text, char32_t limit) {
  const auto first_lead_above = static_cast<unsigned char>(0xC0 | limit >> 6);
  for (char c : text)
    if (static_cast<unsigned char>(c) >= first_lead_above) return false;
  return true;
}

// Code points that can make NFC change a text: marks (a nonzero combining class), those
// NFC replaces, and those that compose with the character before them (NFC_QC "No" or
// "Maybe", give or take). Text without any of them is already NFC. Built once, from
// utf8proc's own data, by decomposing every code point.
class nfc_changers {
 public:
  nfc_changers() : bits_(0x110000) {
    utf8proc_int32_t parts[8];
    for (utf8proc_int32_t c = 0x300; c < 0x110000; ++c) {
      const utf8proc_property_t* p = utf8proc_get_property(c);
      if (p->category == UTF8PROC_CATEGORY_CN || p->category == UTF8PROC_CATEGORY_CS) continue;
      if (p->combining_class != 0) bits_[size_t(c)] = true;
      int last_boundclass = 0;
      const utf8proc_ssize_t n = utf8proc_decompose_char(c, parts, 8, UTF8PROC_DECOMPOSE, &last_boundclass);
      if (n <= 1 && (n < 1 || parts[0] == c)) continue;
      for (utf8proc_ssize_t i = 1; i < n; ++i) bits_[size_t(parts[i])] = true;
      // Composing the decomposition back gives `c` itself unless NFC replaces `c`.
      const utf8proc_ssize_t m = utf8proc_normalize_utf32(parts, n, UTF8PROC_COMPOSE);
      if (m != 1 || parts[0] != c) bits_[size_t(c)] = true;
    }
  }

  bool none_in(std::string_view text) const {
    for (size_t at = 0; at < text.size();) {
      if (static_cast<unsigned char>(text[at]) < 0xCC) {  // below U+0300
        ++at;
        continue;
      }
      if (bits_[next_code_point(text, at)]) return false;
    }
    return true;
  }

 private:
  std::vector<bool> bits_;
};

}  // namespace

result<normalizer> normalizer::from_json(const json& config, std::string_view source) {
  normalizer n;
  if (config.is_null()) return n;
  if (auto s = add(config, source, n.forms_); !s) return s.err();
  return n;
}

status normalizer::add(const json& config, std::string_view source, std::vector<form>& forms) {
  const std::string type = string_field(config, "type");
  if (type == "Sequence") {
    const auto it = config.find("normalizers");
    if (it == config.end() || !it->is_array())
      return error{std::string(source) + ": normalizer Sequence without a \"normalizers\" list"};
    for (const json& inner : *it)
      if (auto s = add(inner, source, forms); !s) return s;
    return ok();
  }
  if (type == "NFC") {
    forms.push_back(form::nfc);
  } else if (type == "NFD") {
    forms.push_back(form::nfd);
  } else if (type == "NFKC") {
    forms.push_back(form::nfkc);
  } else if (type == "NFKD") {
    forms.push_back(form::nfkd);
  } else {
    return error{std::string(source) + ": unsupported normalizer \"" + type +
                 "\" (supported: NFC, NFD, NFKC, NFKD, Sequence, null)"};
  }
  return ok();
}

std::string_view normalizer::apply(std::string_view text, std::string& storage) const {
  for (form f : forms_) {
    // Characters below U+0300 (the first combining mark) are left alone by NFC and NFD;
    // ASCII by every form.
    if (all_below(text, f == form::nfc || f == form::nfd ? 0x300 : 0x80)) continue;
    static const nfc_changers changers;
    if (f == form::nfc && changers.none_in(text)) continue;
    int options = UTF8PROC_STABLE;
    switch (f) {
      case form::nfc:
        options |= UTF8PROC_COMPOSE;
        break;
      case form::nfd:
        options |= UTF8PROC_DECOMPOSE;
        break;
      case form::nfkc:
        options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
        break;
      case form::nfkd:
        options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
        break;
    }
    utf8proc_uint8_t* out = nullptr;
    const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                            utf8proc_ssize_t(text.size()), &out, utf8proc_option_t(options));
    TROUPE_CHECK(n >= 0, "utf8proc_map failed on valid UTF-8");
    storage.assign(reinterpret_cast<const char*>(out), size_t(n));
    std::free(out);
    text = storage;
  }
  return text;
}

}  // namespace troupe
