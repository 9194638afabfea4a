#pragma once
// The building blocks of the grammars that write JSON (json_schema_grammar.hpp, and the
// values of xml tool calls): JSON values, and JSON Schema translated into them. JSON is
// written compactly, with at most one space after ':' and ',' and none elsewhere, numbers
// of at most 16 digits before and after the point.
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "model/grammar/grammar_builder.hpp"

namespace troupe {

// Bounds of strings and arrays cost a grammar rule per unit: larger ones are refused.
inline constexpr int max_grammar_repetition = 1024;

// What a schema asks that the grammars cannot write, thrown while translating and caught
// where the grammar is finished: "unsupported JSON Schema keyword 'pattern' at #/...".
struct schema_error {
  std::string message;
};
[[noreturn]] void fail_schema(const std::string& where, const std::string& what);

// The rules of JSON, each made once per grammar, on demand.
class json_rules {
 public:
  // escape_less_than: strings write '<' only as \u003c, so JSON inside markup can never
  // hold a closing tag.
  explicit json_rules(grammar_builder& b, bool escape_less_than = false)
      : b_(b), escape_less_than_(escape_less_than) {}

  grammar_builder& builder() { return b_; }

  grammar_sequence optional_space();
  grammar_sequence separator();
  grammar_sequence colon();
  // Exactly the JSON text of v.
  grammar_sequence literal(const nlohmann::ordered_json& v);
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

 private:
  grammar_sequence natural();
  grammar_sequence up_to(int digits);

  grammar_builder& b_;
  bool escape_less_than_;
  grammar_sequence space_, character_, string_, integer_, number_, value_;
};

// One schema document (its $defs are resolved against it) into rules of `rules`' builder.
// Supported: type (a name or a list of names) object, array, string, number, integer,
// boolean, null; properties (written in schema order), required, additionalProperties
// (false; true is accepted, but only the listed properties are written); items, minItems,
// maxItems, minLength, maxLength (each at most max_grammar_repetition); enum, const,
// anyOf; $ref to #/$defs/... or #/definitions/..., recursive ones included; annotations
// (title, description, ...). Anything else throws a schema_error naming it and its place.
class schema_translator {
 public:
  schema_translator(json_rules& rules, const nlohmann::ordered_json& document)
      : rules_(rules), b_(rules.builder()), document_(document) {}

  grammar_sequence value(const nlohmann::ordered_json& schema, const std::string& where);

  // Throws unless every keyword of the schema (an object) is supported or an annotation.
  static void check_keywords(const nlohmann::ordered_json& schema, const std::string& where);
  // The count schema[key] (minItems, maxLength, ...), or fallback when absent; one above
  // max_grammar_repetition is refused.
  static int count(const nlohmann::ordered_json& schema, const char* key, int fallback, const std::string& where);

 private:
  grammar_sequence typed(const nlohmann::ordered_json& schema, const std::string& type, const std::string& where);
  grammar_sequence object(const nlohmann::ordered_json& schema, const std::string& where);
  grammar_sequence string(const nlohmann::ordered_json& schema, const std::string& where);
  grammar_sequence array(const nlohmann::ordered_json& schema, const std::string& where);
  grammar_sequence reference(const nlohmann::ordered_json& ref, const std::string& where);

  json_rules& rules_;
  grammar_builder& b_;
  const nlohmann::ordered_json& document_;
  std::map<std::string, int32_t> references_;
};

}  // namespace troupe
