#pragma once
// A deterministic finite automaton over bytes: the languages of string patterns, formats and
// number bounds, which become grammar rules (one per state) once built. Built by
// regex_automaton.hpp and by hand; combined by intersection; kept trim, so that every state
// can still reach an accepting one and a generation following it never meets a dead end.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace troupe {

class byte_automaton {
 public:
  static constexpr int32_t none = -1;

  int32_t add_state(bool accepting);
  void set_next(int32_t state, uint8_t byte, int32_t to) { next_[size_t(state) * 256 + byte] = to; }
  void set_next(int32_t state, uint8_t first, uint8_t last, int32_t to);
  void set_accepting(int32_t state, bool accepting) { accepting_[size_t(state)] = accepting; }

  int32_t next(int32_t state, uint8_t byte) const { return next_[size_t(state) * 256 + byte]; }
  bool accepting(int32_t state) const { return accepting_[size_t(state)] != 0; }
  size_t size() const { return accepting_.size(); }
  // State 0, unless the automaton is empty (it accepts nothing).
  bool empty() const { return accepting_.empty(); }
  bool matches(std::string_view text) const;

  // The same language without the states that cannot be reached or cannot reach an
  // accepting state, and the moves into them; empty when nothing is accepted.
  byte_automaton trimmed() const;

 private:
  std::vector<int32_t> next_;
  std::vector<uint8_t> accepting_;
};

// The automaton states a pattern, format or bound may take, and the product states an
// intersection may reach: past it, the schema is refused rather than compiled.
inline constexpr size_t max_automaton_states = 8192;

// The strings both accept (trimmed); an error past max_states.
result<byte_automaton> intersect(const byte_automaton& a, const byte_automaton& b,
                                 size_t max_states = max_automaton_states);

// Every byte string `a` does not accept (intersect it with a language of text: the
// complement alone accepts ill-formed UTF-8 too).
byte_automaton complement(const byte_automaton& a);

// Strings of at least min_chars and, unless max_chars < 0, at most max_chars characters,
// counting every byte that does not continue a UTF-8 sequence (0x80-0xBF).
byte_automaton character_count_automaton(int min_chars, int max_chars);

}  // namespace troupe
