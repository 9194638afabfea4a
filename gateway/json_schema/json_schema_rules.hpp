#pragma once
// The building blocks of the grammars that write JSON (json_schema_grammar.hpp, and the
// values of xml tool calls); json_schema_translator.hpp puts them together. JSON is
// written compactly, with at most one space after ':' and ',' and none elsewhere, numbers
// of at most 16 digits before and after the point.
#include <string>

#include <nlohmann/json.hpp>

#include "text/grammar/byte_automaton.hpp"
#include "text/grammar/grammar_builder.hpp"

namespace troupe {

// Bounds of strings and arrays cost a grammar rule per unit: larger ones are refused.
inline constexpr int max_grammar_repetition = 1024;

// What a schema asks that the grammars cannot write, thrown while translating and caught
// where the grammar is finished: "unsupported JSON Schema keyword 'pattern' at #/...".
struct schema_error {
  std::string message;
};
[[noreturn]] void fail_schema(const std::string& where, const std::string& what);

// Whether a keyword only annotates (title, description, $defs, ...).
bool json_schema_annotation(const std::string& key);

// The rules of JSON, each made once per grammar, on demand.
class json_rules {
 public:
  // escape_less_than: strings write '<' only as \u003c, so JSON inside markup can never
  // hold a closing tag.
  explicit json_rules(grammar_builder& b, bool escape_less_than = false) : b_(b), escape_less_than_(escape_less_than) {}

  grammar_builder& builder() { return b_; }

  grammar_sequence optional_space();
  grammar_sequence separator();
  grammar_sequence colon();
  // Exactly the JSON text of v.
  grammar_sequence literal(const nlohmann::ordered_json& v);
  std::string literal_text(const nlohmann::ordered_json& v) const;
  grammar_sequence string();
  // A string of at least min_length characters (an escape counts as one) and, unless
  // max_length < 0, at most max_length.
  grammar_sequence string(int min_length, int max_length);
  // One character of a JSON string, raw or escaped.
  grammar_sequence character();
  grammar_sequence integer();
  grammar_sequence number();
  // Any JSON value.
  grammar_sequence value();
  // An object of any members whose values are `member_value`.
  grammar_sequence object(const grammar_sequence& member_value);
  // An array of `item`s, at least min_items, at most max_items (< 0: no bound).
  grammar_sequence array(const grammar_sequence& item, int min_items = 0, int max_items = -1);
  // A JSON string whose text, as UTF-8, `a` accepts; '"', '\\' and control characters
  // (and '<' when escaping it) written as escapes. A rule per state of `a`.
  grammar_sequence string_of(const byte_automaton& a);
  // The bytes `a` accepts as they are (numbers; raw text).
  grammar_sequence text_of(const byte_automaton& a);

 private:
  grammar_sequence automaton(const byte_automaton& a, bool quoted);
  grammar_sequence natural();
  grammar_sequence up_to(int digits);

  grammar_builder& b_;
  bool escape_less_than_;
  grammar_sequence space_, character_, string_, integer_, number_, value_;
};

}  // namespace troupe
