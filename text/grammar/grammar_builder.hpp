#pragma once
// Writes grammars: sequences of symbols put together from literals, byte ranges and rules.
// Rules may refer to themselves (declare first, define later), except on the left.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/grammar/grammar.hpp"

namespace troupe {

using grammar_sequence = std::vector<grammar_symbol>;

class grammar_builder {
 public:
  // One byte out of the inclusive ranges.
  grammar_sequence bytes(std::initializer_list<std::pair<uint8_t, uint8_t>> ranges);
  grammar_sequence bytes(const byte_set& set);
  // Exactly these bytes.
  grammar_sequence literal(std::string_view text);
  // Exactly one of these byte strings, written as a trie (a rule where they part ways), so
  // that a prefix they share is one parser stack, not one per string.
  grammar_sequence one_of(std::vector<std::string> texts);
  // One well-formed UTF-8 character (no surrogates, no overlong forms) of at least two bytes.
  grammar_sequence multibyte_utf8();

  // A new rule with these alternatives, as a one-symbol sequence.
  grammar_sequence rule(std::vector<grammar_sequence> alternatives);
  grammar_sequence optional(grammar_sequence s) { return rule({std::move(s), {}}); }
  // Zero or more repetitions, through right recursion.
  grammar_sequence repeated(grammar_sequence s);
  // At least min_count repetitions and, unless max_count < 0, at most max_count: a rule
  // per repetition, so bounds must stay small.
  grammar_sequence repeated(const grammar_sequence& s, int min_count, int max_count);

  // A rule to be defined later, for recursion; reference() names it in sequences.
  int32_t declare();
  void define(int32_t rule_index, std::vector<grammar_sequence> alternatives);
  static grammar_sequence reference(int32_t rule_index) { return {grammar_symbol{true, rule_index}}; }

  // The rules of another grammar, added to this one: a reference to its root.
  grammar_sequence include(const grammar& other);

  // The grammar of `root` (which must be one rule reference, or is wrapped into one).
  grammar finish(grammar_sequence root);

 private:
  int32_t byte_set_index(const byte_set& set);
  // The trie of one_of over texts[first, last) (sorted, unique), which share their first
  // `depth` bytes: what may follow them.
  grammar_sequence trie_of(const std::vector<std::string>& texts, size_t first, size_t last, size_t depth);

  grammar grammar_;
};

// The concatenation of the sequences.
grammar_sequence join(std::initializer_list<grammar_sequence> parts);

}  // namespace troupe
