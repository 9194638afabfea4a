#pragma once
// A context-free grammar over bytes, the language a constrained decode must stay in. Plain
// structs (TROUPE_FIELDS): a grammar is built at the gateway and travels in actor messages
// to where sampling happens. Text is UTF-8 bytes; a grammar that wants well-formed UTF-8
// spells the multi-byte sequences out (grammar_builder does).
#include <cstdint>
#include <vector>

#include "base/fields.hpp"

namespace troupe {

// A set of byte values, one bit each (four words of 64).
struct byte_set {
  std::vector<uint64_t> words = std::vector<uint64_t>(4, 0);

  bool contains(uint8_t b) const { return (words[b >> 6] >> (b & 63)) & 1; }
  void add(uint8_t first, uint8_t last) {
    for (int b = first; b <= last; ++b) words[b >> 6] |= uint64_t(1) << (b & 63);
  }
  bool operator==(const byte_set&) const = default;
  TROUPE_FIELDS(byte_set, words)
};

// One symbol of an alternative: one byte out of byte_sets[index], or a match of rules[index].
struct grammar_symbol {
  bool is_rule = false;
  int32_t index = 0;
  bool operator==(const grammar_symbol&) const = default;
  TROUPE_FIELDS(grammar_symbol, is_rule, index)
};

// The symbols matched one after the other; empty matches the empty string.
struct grammar_alternative {
  std::vector<grammar_symbol> symbols;
  TROUPE_FIELDS(grammar_alternative, symbols)
};

struct grammar_rule {
  std::vector<grammar_alternative> alternatives;
  TROUPE_FIELDS(grammar_rule, alternatives)
};

// The language of rules[root]. No rule may be left-recursive (compile_grammar says which).
struct grammar {
  std::vector<byte_set> byte_sets;
  std::vector<grammar_rule> rules;
  int32_t root = 0;
  TROUPE_FIELDS(grammar, byte_sets, rules, root)
};

}  // namespace troupe
