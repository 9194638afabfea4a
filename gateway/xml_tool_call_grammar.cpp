#include "gateway/xml_tool_call_grammar.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string>

#include "gateway/json_schema/json_schema_merge.hpp"
#include "gateway/json_schema/json_schema_translator.hpp"
#include "gateway/streamed_text.hpp"
#include "gateway/tool_parameter_type.hpp"
#include "text/grammar/grammar_builder.hpp"
#include "text/grammar/regex_automaton.hpp"

namespace troupe {
namespace {

using json = nlohmann::ordered_json;

const std::set<std::string> type_names = {"string", "integer", "number", "boolean", "null", "object", "array"};

// The reader takes a function or parameter name up to the first '>' and trims it.
bool writable_name(const std::string& name) {
  return !name.empty() && name.find('>') == std::string::npos && !is_ascii_space(name.front()) &&
         !is_ascii_space(name.back());
}

bool reads_as_null(const std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return lower == "null";
}

// Whether a given string can be written as raw text and read back as itself: one holding
// "</" could close the markup.
bool writable_raw(const std::string& text) { return text.find("</") == std::string::npos && !reads_as_null(text); }

// Whether the schema's type (a name or a list of names) allows null.
bool allows_null(const json& schema) {
  const json type = schema.value("type", json());
  return type == "null" || (type.is_array() && std::find(type.begin(), type.end(), "null") != type.end());
}

// A property written as raw text or a scalar is checked here, not by schema_translator.
void check_scalar_schema(const json& schema, schema_translator& translator, const std::string& type,
                         const std::string& where) {
  translator.check_known_keywords(schema, where);
  const json types = schema.value("type", json());
  for (const json& t : types.is_array() ? types : json::array({types}))
    if (!t.is_string() || !type_names.contains(t.get<std::string>()))
      fail_schema(where + "/type", "unknown type " + t.dump());
  for (const char* key : {"$ref", "anyOf", "oneOf", "allOf"})
    if (schema.contains(key))
      fail_schema(where + "/" + key, std::string("'") + key + "' beside type '" + type +
                                         "' (an xml tool call writes such a parameter as its type's text)");
}

// The members of const or enum, or nothing when the schema has neither.
std::optional<json> listed_values(const json& schema, const std::string& where) {
  if (schema.contains("const")) return json::array({schema["const"]});
  if (!schema.contains("enum")) return std::nullopt;
  if (!schema["enum"].is_array() || schema["enum"].empty())
    fail_schema(where + "/enum", "an enum that is not a non-empty array");
  return schema["enum"];
}

class xml_call_rules {
 public:
  explicit xml_call_rules(grammar_builder& b) : b_(b), json_(b, /*escape_less_than=*/true) {}

  grammar_sequence call(const tool_schema& tool) {
    if (!writable_name(tool.name))
      throw schema_error{"a name that the xml markup cannot carry (empty, holding '>' or with spaces around it)"};
    return b_.rule({join({b_.literal("<tool_call>\n<function=" + tool.name + ">\n"),
                          tool.parameters.is_null() ? grammar_sequence{} : parameters(tool.parameters, tool.strict),
                          b_.literal("</function>\n</tool_call>")})});
  }

 private:
  grammar_sequence parameters(const json& given, bool strict) {
    if (!given.is_object()) fail_schema("#", "parameters that are not an object schema");
    const json schema = given.contains("allOf") ? merge_all_of(given, given, "#") : given;
    schema_translator translator(json_, given, strict);
    translator.check_known_keywords(schema, "#");
    for (const char* key : {"$ref",
                            "const",
                            "enum",
                            "anyOf",
                            "oneOf",
                            "items",
                            "prefixItems",
                            "additionalItems",
                            "uniqueItems",
                            "minItems",
                            "maxItems",
                            "minLength",
                            "maxLength",
                            "pattern",
                            "format",
                            "minimum",
                            "maximum",
                            "exclusiveMinimum",
                            "exclusiveMaximum",
                            "multipleOf",
                            "patternProperties",
                            "propertyNames",
                            "minProperties",
                            "maxProperties"})
      if (schema.contains(key))
        fail_schema(
            std::string("#/") + key,
            std::string("'") + key + "' in the parameters of an xml tool call (they are an object's properties)");
    if (schema.contains("type") && schema["type"] != "object")
      fail_schema("#/type", "parameters that are not an object");
    if (schema.contains("additionalProperties") && !schema["additionalProperties"].is_boolean())
      fail_schema("#/additionalProperties", "an additionalProperties schema (only true or false)");
    if (!schema.contains("properties")) return {};
    const json& properties = schema["properties"];
    if (!properties.is_object()) fail_schema("#/properties", "properties that are not an object");
    std::set<std::string> required;
    for (const json& name : schema.value("required", json::array())) {
      if (!name.is_string() || !properties.contains(name.get<std::string>()))
        fail_schema("#/required", "a required property that is not in properties");
      required.insert(name.get<std::string>());
    }
    grammar_sequence written;
    for (const auto& [name, property] : properties.items()) {
      const std::string where = "#/properties/" + name;
      if (!writable_name(name))
        fail_schema(where,
                    "a property name that the xml markup cannot carry (empty, holding '>' or with spaces around it)");
      auto parameter = join({b_.literal("<parameter=" + name + ">\n"), value(property, translator, where),
                             b_.literal("\n</parameter>\n")});
      written = join({written, required.contains(name) ? parameter : b_.optional(parameter)});
    }
    return written;
  }

  // The value as the reader converts it: by the type its property declares.
  grammar_sequence value(const json& schema, schema_translator& translator, const std::string& where) {
    const std::string type = declared_parameter_type(schema);
    if (type == "string") return text_value(schema, translator, where);
    if (type == "integer" || type == "number" || type == "boolean" || type == "null")
      return scalar_value(schema, translator, type, where);
    if (type.empty() && schema.is_object() && !schema.contains("$ref") && !schema.contains("anyOf"))
      if (auto listed = listed_values(schema, where)) return untyped_listed_value(schema, translator, *listed, where);
    return translator.value(schema, where);
  }

  // An enum or const without a type is read back as JSON when it parses as JSON, else as
  // text: a string that does not parse is written raw, as the template would, the rest as
  // JSON text.
  grammar_sequence untyped_listed_value(const json& schema, schema_translator& translator, const json& listed,
                                        const std::string& where) {
    translator.check_known_keywords(schema, where);
    std::vector<std::string> texts;
    for (const json& v : listed) {
      const bool raw = v.is_string() && !json::accept(v.get<std::string>()) && writable_raw(v.get<std::string>());
      texts.push_back(raw ? v.get<std::string>() : json_.literal_text(v));
    }
    return b_.one_of(std::move(texts));
  }

  grammar_sequence text_value(const json& schema, schema_translator& translator, const std::string& where) {
    check_scalar_schema(schema, translator, "string", where);
    const bool nullable = allows_null(schema);
    if (auto listed = listed_values(schema, where)) {
      std::vector<std::string> texts;
      for (const json& v : *listed) {
        if (v.is_null() && nullable) texts.push_back("null");
        if (!v.is_string()) continue;  // not a string: the reader would give it back as one
        const std::string text = v.get<std::string>();
        if (!writable_raw(text))
          fail_schema(where, "the string " + v.dump() +
                                 ", which an xml tool call cannot write raw (it holds \"</\" "
                                 "or reads back as null)");
        texts.push_back(text);
      }
      if (texts.empty()) fail_schema(where, "an enum or const with no string to write");
      return b_.one_of(std::move(texts));
    }
    grammar_sequence text;
    if (auto a = translator.string_automaton(schema, where)) {
      auto raw = intersect(*a, raw_text_automaton());
      if (!raw || raw->empty()) fail_schema(where, "a string schema that no raw text an xml tool call can write meets");
      text = json_.text_of(*raw);
    } else {
      const int min_length = schema_translator::count(schema, "minLength", 0, where);
      const int max_length = schema_translator::count(schema, "maxLength", -1, where);
      if (max_length >= 0 && max_length < min_length) fail_schema(where, "maxLength below minLength");
      text = raw_text(min_length, max_length);
    }
    return nullable ? b_.rule({text, b_.literal("null")}) : text;
  }

  grammar_sequence scalar_value(const json& schema, schema_translator& translator, const std::string& type,
                                const std::string& where) {
    check_scalar_schema(schema, translator, type, where);
    const bool nullable = type == "null" || allows_null(schema);
    if (auto listed = listed_values(schema, where)) {
      std::vector<grammar_sequence> choices;
      for (const json& v : *listed) {
        const bool fits = v.is_null()         ? nullable
                          : type == "integer" ? v.is_number_integer()
                          : type == "number"  ? v.is_number()
                                              : type == "boolean" && v.is_boolean();
        if (fits) choices.push_back(json_.literal(v));
      }
      if (choices.empty()) fail_schema(where, "an enum or const with no " + type + " to write");
      return b_.rule(std::move(choices));
    }
    std::vector<grammar_sequence> choices;
    if (type == "integer" || type == "number") {
      auto bounded = translator.number_automaton(schema, type == "integer", where);
      choices.push_back(bounded ? json_.text_of(*bounded) : type == "integer" ? json_.integer() : json_.number());
    }
    if (type == "boolean") choices = {b_.literal("true"), b_.literal("false")};
    if (nullable) choices.push_back(b_.literal("null"));
    return b_.rule(std::move(choices));
  }

  // min_length to max_length (< 0: no bound) raw characters, but not the four of "null"
  // in any letter case: the lengths below four, above four, and four that differ from it.
  grammar_sequence raw_text(int min_length, int max_length) {
    const auto c = raw_character();
    const auto fits = [&](int length) { return length >= min_length && (max_length < 0 || length <= max_length); };
    std::vector<grammar_sequence> choices;
    if (min_length <= 3) choices.push_back(b_.repeated(c, min_length, max_length < 0 ? 3 : std::min(max_length, 3)));
    if (fits(4)) {
      auto n = b_.bytes({{'n', 'n'}, {'N', 'N'}}), u = b_.bytes({{'u', 'u'}, {'U', 'U'}}),
           l = b_.bytes({{'l', 'l'}, {'L', 'L'}});
      choices.push_back(join({raw_character_but('n'), c, c, c}));
      choices.push_back(join({n, raw_character_but('u'), c, c}));
      choices.push_back(join({n, u, raw_character_but('l'), c}));
      choices.push_back(join({n, u, l, raw_character_but('l')}));
    }
    if (max_length < 0 || max_length >= 5) choices.push_back(b_.repeated(c, std::max(min_length, 5), max_length));
    return b_.rule(std::move(choices));
  }

  // raw_text as an automaton, for strings with a pattern or format: raw characters, and
  // not "null" in any letter case.
  static const byte_automaton& raw_text_automaton() {
    static const byte_automaton automaton = [] {
      auto characters =
          whole_match_automaton(parse_regex("[\\t\\n\\x20-\\x3b\\x3d-\\x7e\\u0080-\\u{10ffff}]*").value()).value();
      auto null = whole_match_automaton(parse_regex("[nN][uU][lL][lL]").value()).value();
      return intersect(characters, complement(null)).value();
    }();
    return automaton;
  }

  grammar_sequence raw_character() {
    if (raw_character_.empty()) raw_character_ = raw_character_but(0);
    return raw_character_;
  }

  // One raw character other than `letter` in either case (0: any).
  grammar_sequence raw_character_but(char letter) {
    byte_set ascii;
    ascii.add('\t', '\n');
    ascii.add(0x20, '<' - 1);
    ascii.add('<' + 1, 0x7e);
    for (char c : {char(std::tolower(letter)), char(std::toupper(letter))})
      if (c) ascii.words[uint8_t(c) >> 6] &= ~(uint64_t(1) << (uint8_t(c) & 63));
    if (multibyte_.empty()) multibyte_ = b_.multibyte_utf8();
    return b_.rule({b_.bytes(ascii), multibyte_});
  }

  grammar_builder& b_;
  json_rules json_;
  grammar_sequence raw_character_, multibyte_;
};

}  // namespace

result<grammar> xml_tool_call_grammar(const std::vector<tool_schema>& tools, bool several) {
  if (tools.empty()) return error{"no tools to call"};
  grammar_builder b;
  xml_call_rules rules(b);
  std::vector<grammar_sequence> calls;
  for (const tool_schema& tool : tools) {
    try {
      calls.push_back(rules.call(tool));
    } catch (const schema_error& e) {
      return error{"tool '" + tool.name + "': " + e.message};
    }
  }
  auto call = b.rule(std::move(calls));
  if (!several) return b.finish(call);
  return b.finish(join({call, b.repeated(join({b.literal("\n"), call}))}));
}

}  // namespace troupe
