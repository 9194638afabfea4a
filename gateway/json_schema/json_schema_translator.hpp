#pragma once
// JSON Schema translated into the rules of json_rules: what response_format json_schema
// and forced tool calls write. Supported (docs/api.md lists them):
// - type (a name or a list of names), enum, const, anyOf, oneOf (when its branches are
//   told apart by a const or enum property, as discriminated unions are), allOf (merged,
//   json_schema_merge.hpp), $ref to #/$defs/... or #/definitions/..., recursive ones too;
// - strings: minLength, maxLength, pattern (regex_automaton.hpp), format
//   (json_string_formats.hpp), all of them at once;
// - numbers and integers: minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf;
// - objects: properties (written in schema order), required, additionalProperties (false,
//   true or a schema), patternProperties, propertyNames, minProperties, maxProperties;
// - arrays: items, prefixItems, minItems, maxItems; uniqueItems only where it cannot bind;
// - annotations (title, description, ...).
// With strict, anything else throws a schema_error naming it and its place; without, it is
// left out, and ignored() lists the keywords left out.
#include <map>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "gateway/json_schema/json_schema_rules.hpp"
#include "text/grammar/byte_automaton.hpp"

namespace troupe {

class schema_translator {
 public:
  schema_translator(json_rules& rules, const nlohmann::ordered_json& document, bool strict = true)
      : rules_(rules), b_(rules.builder()), document_(document), strict_(strict) {}

  grammar_sequence value(const nlohmann::ordered_json& schema, const std::string& where);

  // Throws, when strict, unless every keyword of the schema (an object) is supported or an
  // annotation; without strict, lists the others in ignored().
  void check_known_keywords(const nlohmann::ordered_json& schema, const std::string& where);
  // The count schema[key] (minItems, maxLength, ...), or fallback when absent; one above
  // max_grammar_repetition is refused.
  static int count(const nlohmann::ordered_json& schema, const char* key, int fallback, const std::string& where);

  // The texts a string schema's pattern, format and lengths allow, as an automaton; none
  // when it has neither pattern nor format.
  std::optional<byte_automaton> string_automaton(const nlohmann::ordered_json& schema, const std::string& where);
  // The numbers a number or integer schema's bounds allow; none when it has no bound.
  std::optional<byte_automaton> number_automaton(const nlohmann::ordered_json& schema, bool integer,
                                                 const std::string& where);

  // The keywords left out (only without strict).
  const std::set<std::string>& ignored() const { return ignored_; }

 private:
  // A keyword the grammar cannot enforce: an error when strict, else left out.
  void unsupported(const std::string& where, const std::string& what, const std::string& keyword);
  grammar_sequence typed(const nlohmann::ordered_json& schema, const std::string& type, const std::string& where);
  grammar_sequence one_of(const nlohmann::ordered_json& schema, const std::string& where);
  grammar_sequence object(const nlohmann::ordered_json& schema, const std::string& where);
  grammar_sequence string(const nlohmann::ordered_json& schema, const std::string& where);
  grammar_sequence array(const nlohmann::ordered_json& schema, const std::string& where);
  grammar_sequence reference(const nlohmann::ordered_json& ref, const std::string& where);
  // A member an object may have beyond its listed properties; none when it may have none.
  std::optional<grammar_sequence> extra_member(const nlohmann::ordered_json& schema, const std::string& where);

  json_rules& rules_;
  grammar_builder& b_;
  const nlohmann::ordered_json& document_;
  const bool strict_;
  std::map<std::string, int32_t> references_;
  std::set<std::string> ignored_;
};

}  // namespace troupe
