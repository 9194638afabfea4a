#include "text/tokenizer/regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace troupe {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof buffer);
  return reinterpret_cast<const char*>(buffer);
}

// Oniguruma's \s and \S in PCRE2 terms; every other escape is copied as it is.
std::string to_pcre2(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size());
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[++i];
      if (next == 's') {
        out += "\\p{White_Space}";
      } else if (next == 'S') {
        out += "\\P{White_Space}";
      } else {
        out += '\\';
        out += next;
      }
    } else {
      out += pattern[i];
    }
  }
  return out;
}

// Per-thread match state: match data for one pair of offsets, and a JIT stack larger
// than PCRE2's 32 KiB default for long runs of one character class.
struct thread_matcher {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);

  thread_matcher() { pcre2_jit_stack_assign(context, nullptr, stack); }
  ~thread_matcher() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

}  // namespace

void regex::code_deleter::operator()(void* code) const { pcre2_code_free(static_cast<pcre2_code*>(code)); }

result<regex> regex::compile(std::string_view pattern, std::string_view source) {
  const std::string translated = to_pcre2(pattern);
  int code = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* compiled = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                       PCRE2_UTF | PCRE2_UCP, &code, &offset, nullptr);
  if (!compiled)
    return error{std::string(source) + ": cannot compile regex \"" + std::string(pattern) +
                 "\": " + pcre2_message(code)};
  pcre2_jit_compile(compiled, PCRE2_JIT_COMPLETE);  // without a JIT, pcre2_match interprets
  regex r;
  r.code_.reset(compiled);
  return r;
}

result<bool> regex::find(std::string_view text, size_t from, size_t& begin, size_t& end) const {
  thread_local thread_matcher m;
  const int rc = pcre2_match(static_cast<const pcre2_code*>(code_.get()), reinterpret_cast<PCRE2_SPTR>(text.data()),
                             text.size(), from, PCRE2_NO_UTF_CHECK, m.data, m.context);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0) return error{"regex match failed: " + pcre2_message(rc)};
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(m.data);
  begin = ovector[0];
  end = ovector[1];
  return true;
}

size_t regex::next_char(std::string_view text, size_t at) {
  do ++at;
  while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80);
  return at;
}

}  // namespace troupe
