#pragma once
// A PCRE2 pattern for tokenizer.json's regexes: UTF mode with Unicode properties, JIT-
// compiled where PCRE2 has a JIT. Hugging Face tokenizers runs these patterns on
// Oniguruma, whose \s is the White_Space property; PCRE2's \s also takes U+180E, so \s
// and \S are rewritten to the property. Safe to share between threads.
#include <memory>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace troupe {

class regex {
 public:
  // `source` names the file in error messages.
  static result<regex> compile(std::string_view pattern, std::string_view source);

  // Calls on_match(begin, end) for each match in `text` (valid UTF-8) from left to right,
  // as Oniguruma's find_iter does: the search resumes at the end of a match, and empty
  // matches are skipped.
  template <class F>
  status for_each_match(std::string_view text, F&& on_match) const {
    size_t from = 0;
    while (from <= text.size()) {
      size_t begin, end;
      auto found = find(text, from, begin, end);
      if (!found) return found.err();
      if (!*found) break;
      if (begin == end) {
        from = next_char(text, end);
        continue;
      }
      on_match(begin, end);
      from = end;
    }
    return ok();
  }

 private:
  struct code_deleter {
    void operator()(void* code) const;
  };

  regex() = default;

  // Whether a match starts at or after `from`; a failed match (e.g. PCRE2's match limit)
  // is an error.
  result<bool> find(std::string_view text, size_t from, size_t& begin, size_t& end) const;
  static size_t next_char(std::string_view text, size_t at);

  std::unique_ptr<void, code_deleter> code_;
};

}  // namespace troupe
