#include "gateway/json_schema_rules.hpp"

#include <charconv>
#include <set>
#include <string_view>

namespace troupe {

using json = nlohmann::ordered_json;

namespace {

constexpr int max_integer_digits = 16;
constexpr int max_fraction_digits = 16;
constexpr int max_exponent_digits = 2;  // 1e999 overflows a double: parsers reject it

const std::set<std::string> annotations = {"title", "description", "default", "examples", "$schema", "$id",
                                           "$comment", "$defs", "definitions", "deprecated", "readOnly",
                                           "writeOnly"};
const std::set<std::string> supported = {"type", "properties", "required", "additionalProperties", "items",
                                         "minItems", "maxItems", "minLength", "maxLength", "enum", "const",
                                         "anyOf", "$ref"};

// The value a JSON pointer's tokens ("a/b/0", with ~0 and ~1 escapes) name in `document`;
// null when it names none or is malformed. nlohmann's json_pointer throws on both.
const json* resolve(const json& document, std::string_view pointer) {
  const json* at = &document;
  while (true) {
    const size_t slash = pointer.find('/');
    const std::string_view part = pointer.substr(0, slash);
    std::string token;
    for (size_t i = 0; i < part.size(); ++i) {
      if (part[i] != '~') {
        token += part[i];
        continue;
      }
      if (i + 1 >= part.size() || (part[i + 1] != '0' && part[i + 1] != '1')) return nullptr;
      token += part[++i] == '0' ? '~' : '/';
    }
    if (at->is_object()) {
      auto it = at->find(token);
      if (it == at->end()) return nullptr;
      at = &*it;
    } else if (at->is_array()) {
      size_t index = 0;
      const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), index);
      if (ec != std::errc() || end != token.data() + token.size() || token.empty() || index >= at->size()) return nullptr;
      at = &(*at)[index];
    } else {
      return nullptr;
    }
    if (slash == std::string_view::npos) return at;
    pointer.remove_prefix(slash + 1);
  }
}

}  // namespace

void fail_schema(const std::string& where, const std::string& what) { throw schema_error{what + " at " + where}; }

grammar_sequence json_rules::optional_space() {
  if (space_.empty()) space_ = b_.optional(b_.literal(" "));
  return space_;
}

grammar_sequence json_rules::separator() { return join({b_.literal(","), optional_space()}); }

grammar_sequence json_rules::colon() { return join({b_.literal(":"), optional_space()}); }

grammar_sequence json_rules::literal(const json& v) {
  std::string text = v.dump();
  if (!escape_less_than_) return b_.literal(text);
  // Outside strings JSON has no '<': every one is a string's, and may be escaped.
  std::string escaped;
  for (char c : text) escaped += c == '<' ? std::string("\\u003c") : std::string(1, c);
  return b_.literal(escaped);
}

grammar_sequence json_rules::string() {
  if (string_.empty()) string_ = string(0, -1);
  return string_;
}

grammar_sequence json_rules::string(int min_length, int max_length) {
  return b_.rule({join({b_.literal("\""), b_.repeated(character(), min_length, max_length), b_.literal("\"")})});
}

grammar_sequence json_rules::character() {
  if (!character_.empty()) return character_;
  auto hex = b_.bytes({{'0', '9'}, {'a', 'f'}, {'A', 'F'}});
  // \uXXXX outside the surrogates: a lone one is not valid JSON text.
  auto unicode_escape = b_.rule({
      join({b_.bytes({{'0', '9'}, {'a', 'c'}, {'A', 'C'}, {'e', 'f'}, {'E', 'F'}}), hex, hex, hex}),
      join({b_.bytes({{'d', 'd'}, {'D', 'D'}}), b_.bytes({{'0', '7'}}), hex, hex}),
  });
  auto raw = escape_less_than_ ? b_.bytes({{0x20, 0x21}, {0x23, 0x3b}, {0x3d, 0x5b}, {0x5d, 0x7f}})
                               : b_.bytes({{0x20, 0x21}, {0x23, 0x5b}, {0x5d, 0x7f}});
  character_ = b_.rule({
      raw,
      b_.multibyte_utf8(),
      join({b_.literal("\\"), b_.bytes({{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 'b'}, {'f', 'f'},
                                        {'n', 'n'}, {'r', 'r'}, {'t', 't'}})}),
      join({b_.literal("\\u"), unicode_escape}),
  });
  return character_;
}

grammar_sequence json_rules::integer() {
  if (integer_.empty()) integer_ = b_.rule({join({b_.optional(b_.literal("-")), natural()})});
  return integer_;
}

grammar_sequence json_rules::number() {
  if (!number_.empty()) return number_;
  auto digit = b_.bytes({{'0', '9'}});
  auto fraction = join({b_.literal("."), digit, up_to(max_fraction_digits - 1)});
  auto exponent = join({b_.bytes({{'e', 'e'}, {'E', 'E'}}), b_.optional(b_.bytes({{'+', '+'}, {'-', '-'}})), digit,
                        up_to(max_exponent_digits - 1)});
  number_ = b_.rule({join({integer(), b_.optional(fraction), b_.optional(exponent)})});
  return number_;
}

grammar_sequence json_rules::value() {
  if (value_.empty()) {
    int32_t index = b_.declare();
    value_ = grammar_builder::reference(index);
    b_.define(index, {object(value_), array(value_), string(), number(), b_.literal("true"), b_.literal("false"),
                      b_.literal("null")});
  }
  return value_;
}

grammar_sequence json_rules::object(const grammar_sequence& member_value) {
  auto member = b_.rule({join({string(), colon(), member_value})});
  return b_.rule({join({b_.literal("{"), b_.optional(join({member, b_.repeated(join({separator(), member}))})),
                        b_.literal("}")})});
}

grammar_sequence json_rules::array(const grammar_sequence& item, int min_items, int max_items) {
  grammar_sequence more;  // what follows the first item
  auto next = join({separator(), item});
  for (int i = 1; i < min_items; ++i) more = join({more, next});
  if (max_items < 0) {
    more = join({more, b_.repeated(next)});
  } else {
    grammar_sequence optional_tail;
    for (int i = std::max(min_items, 1); i < max_items; ++i) optional_tail = b_.optional(join({next, optional_tail}));
    more = join({more, optional_tail});
  }
  grammar_sequence items = join({item, more});
  if (max_items == 0) items.clear();
  else if (min_items == 0) items = b_.optional(items);
  return b_.rule({join({b_.literal("["), items, b_.literal("]")})});
}

// 0 or a digit 1-9 and at most max_integer_digits - 1 more.
grammar_sequence json_rules::natural() {
  return b_.rule({b_.literal("0"), join({b_.bytes({{'1', '9'}}), up_to(max_integer_digits - 1)})});
}

// At most `digits` digits.
grammar_sequence json_rules::up_to(int digits) { return b_.repeated(b_.bytes({{'0', '9'}}), 0, digits); }

void schema_translator::check_keywords(const json& schema, const std::string& where) {
  for (auto& [key, ignored] : schema.items()) {
    if (!supported.contains(key) && !annotations.contains(key))
      fail_schema(where, "unsupported JSON Schema keyword '" + key + "'");
  }
}

grammar_sequence schema_translator::value(const json& schema, const std::string& where) {
  if (schema.is_boolean()) {
    if (!schema.get<bool>()) fail_schema(where, "a schema that allows nothing (false)");
    return rules_.value();
  }
  if (!schema.is_object()) fail_schema(where, "a schema that is not an object");
  check_keywords(schema, where);
  if (schema.contains("$ref")) return reference(schema["$ref"], where + "/$ref");
  if (schema.contains("const")) return rules_.literal(schema["const"]);
  if (schema.contains("enum")) {
    if (!schema["enum"].is_array() || schema["enum"].empty())
      fail_schema(where + "/enum", "an enum that is not a non-empty array");
    std::vector<grammar_sequence> choices;
    for (auto& v : schema["enum"]) choices.push_back(rules_.literal(v));
    return b_.rule(std::move(choices));
  }
  if (schema.contains("anyOf")) {
    auto& any_of = schema["anyOf"];
    if (!any_of.is_array() || any_of.empty()) fail_schema(where + "/anyOf", "anyOf that is not a non-empty array");
    std::vector<grammar_sequence> choices;
    for (size_t i = 0; i < any_of.size(); ++i) choices.push_back(value(any_of[i], where + "/anyOf/" + std::to_string(i)));
    return b_.rule(std::move(choices));
  }
  if (!schema.contains("type")) {
    if (schema.contains("properties")) return typed(schema, "object", where);
    if (schema.contains("items")) return typed(schema, "array", where);
    return rules_.value();
  }
  auto& type = schema["type"];
  if (type.is_string()) return typed(schema, type.get<std::string>(), where);
  if (!type.is_array() || type.empty()) fail_schema(where + "/type", "a type that is neither a name nor a list of names");
  std::vector<grammar_sequence> choices;
  for (auto& t : type) {
    if (!t.is_string()) fail_schema(where + "/type", "a type that is not a name");
    choices.push_back(typed(schema, t.get<std::string>(), where));
  }
  return b_.rule(std::move(choices));
}

grammar_sequence schema_translator::typed(const json& schema, const std::string& type, const std::string& where) {
  if (type == "string") return string(schema, where);
  if (type == "integer") return rules_.integer();
  if (type == "number") return rules_.number();
  if (type == "boolean") return b_.rule({b_.literal("true"), b_.literal("false")});
  if (type == "null") return b_.literal("null");
  if (type == "object") return object(schema, where);
  if (type == "array") return array(schema, where);
  fail_schema(where + "/type", "unknown type '" + type + "'");
}

grammar_sequence schema_translator::object(const json& schema, const std::string& where) {
  auto additional = schema.value("additionalProperties", json(true));
  if (!additional.is_boolean())
    fail_schema(where + "/additionalProperties", "an additionalProperties schema (only true or false)");
  if (!schema.contains("properties")) {
    if (!additional.get<bool>()) return b_.literal("{}");
    return rules_.object(rules_.value());
  }
  auto& properties = schema["properties"];
  if (!properties.is_object()) fail_schema(where + "/properties", "properties that are not an object");
  std::set<std::string> required;
  for (auto& name : schema.value("required", json::array())) {
    if (!name.is_string() || !properties.contains(name.get<std::string>()))
      fail_schema(where + "/required", "a required property that is not in properties");
    required.insert(name.get<std::string>());
  }
  // Members in schema order, the optional ones skippable: after_written[i] follows a
  // member already written (so starts with a comma), first_from[i] does not.
  std::vector<std::pair<std::string, grammar_sequence>> members;
  for (auto& [name, property] : properties.items()) {
    members.emplace_back(name, join({rules_.literal(json(name)), rules_.colon(),
                                     value(property, where + "/properties/" + name)}));
  }
  grammar_sequence after_written, first_from;
  for (size_t i = members.size(); i-- > 0;) {
    auto& [name, member] = members[i];
    auto written_here = join({rules_.separator(), member, after_written});
    auto first_here = join({member, after_written});
    if (required.contains(name)) {
      after_written = b_.rule({written_here});
      first_from = b_.rule({first_here});
    } else {
      after_written = b_.rule({written_here, after_written});
      first_from = b_.rule({first_here, first_from});
    }
  }
  return b_.rule({join({b_.literal("{"), first_from, b_.literal("}")})});
}

int schema_translator::count(const json& schema, const char* key, int fallback, const std::string& where) {
  if (!schema.contains(key)) return fallback;
  const json& v = schema[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    fail_schema(where + "/" + key, std::string(key) + " that is not a count");
  if (v.get<int64_t>() > max_grammar_repetition)
    fail_schema(where + "/" + key, std::string(key) + " above " + std::to_string(max_grammar_repetition));
  return v.get<int>();
}

grammar_sequence schema_translator::string(const json& schema, const std::string& where) {
  if (!schema.contains("minLength") && !schema.contains("maxLength")) return rules_.string();
  const int min_length = count(schema, "minLength", 0, where), max_length = count(schema, "maxLength", -1, where);
  if (max_length >= 0 && max_length < min_length) fail_schema(where, "maxLength below minLength");
  return rules_.string(min_length, max_length);
}

grammar_sequence schema_translator::array(const json& schema, const std::string& where) {
  int min_items = count(schema, "minItems", 0, where), max_items = count(schema, "maxItems", -1, where);
  if (max_items >= 0 && max_items < min_items) fail_schema(where, "maxItems below minItems");
  auto item = schema.contains("items") ? b_.rule({value(schema["items"], where + "/items")}) : rules_.value();
  return rules_.array(item, min_items, max_items);
}

// A $ref becomes a rule, declared before it is defined: recursive references work.
grammar_sequence schema_translator::reference(const json& ref, const std::string& where) {
  if (!ref.is_string()) fail_schema(where, "a $ref that is not a string");
  auto target = ref.get<std::string>();
  if (auto found = references_.find(target); found != references_.end()) return grammar_builder::reference(found->second);
  const json* found = nullptr;
  if (target.starts_with("#/$defs/") || target.starts_with("#/definitions/")) found = resolve(document_, target.substr(2));
  if (!found) fail_schema(where, "a $ref that names no #/$defs/ entry ('" + target + "')");
  int32_t index = b_.declare();
  references_[target] = index;
  b_.define(index, {value(*found, target)});
  return grammar_builder::reference(index);
}

}  // namespace troupe
