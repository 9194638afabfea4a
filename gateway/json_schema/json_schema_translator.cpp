#include "gateway/json_schema/json_schema_translator.hpp"

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "gateway/json_schema/json_number_bounds.hpp"
#include "gateway/json_schema/json_pointer.hpp"
#include "gateway/json_schema/json_schema_merge.hpp"
#include "gateway/json_schema/json_string_formats.hpp"
#include "text/grammar/regex_automaton.hpp"

namespace troupe {

using json = nlohmann::ordered_json;

namespace {

const std::set<std::string> supported = {"type",
                                         "properties",
                                         "required",
                                         "additionalProperties",
                                         "items",
                                         "minItems",
                                         "maxItems",
                                         "minLength",
                                         "maxLength",
                                         "enum",
                                         "const",
                                         "anyOf",
                                         "oneOf",
                                         "allOf",
                                         "$ref",
                                         "pattern",
                                         "format",
                                         "minimum",
                                         "maximum",
                                         "exclusiveMinimum",
                                         "exclusiveMaximum",
                                         "multipleOf",
                                         "propertyNames",
                                         "patternProperties",
                                         "minProperties",
                                         "maxProperties",
                                         "prefixItems",
                                         "uniqueItems",
                                         "additionalItems"};

// Object members whose counts a grammar tracks: properties times the counts told apart.
constexpr size_t max_counted_members = 100000;
constexpr size_t max_cached_patterns = 256;

// Patterns compiled once per process: clients send the same schemas again and again.
result<byte_automaton> pattern_automaton(const std::string& pattern) {
  static std::mutex mutex;
  static std::map<std::string, result<byte_automaton>> cache;
  {
    std::lock_guard lock(mutex);
    if (auto found = cache.find(pattern); found != cache.end()) return found->second;
  }
  auto compiled = regex_automaton(pattern);
  std::lock_guard lock(mutex);
  if (cache.size() >= max_cached_patterns) cache.clear();
  cache.emplace(pattern, compiled);
  return compiled;
}

byte_automaton narrowed(const byte_automaton& a, const byte_automaton& b, const std::string& where) {
  auto both = intersect(a, b);
  if (!both) fail_schema(where, "a schema whose automaton needs " + both.err().message);
  return std::move(both).value();
}

// The strings a list of names is not.
byte_automaton other_than(const std::vector<std::string>& names) {
  byte_automaton trie;
  trie.add_state(false);
  for (auto& name : names) {
    int32_t at = 0;
    for (char c : name) {
      int32_t to = trie.next(at, uint8_t(c));
      if (to == byte_automaton::none) {
        to = trie.add_state(false);
        trie.set_next(at, uint8_t(c), to);
      }
      at = to;
    }
    trie.set_accepting(at, true);
  }
  return complement(trie);
}

// Whether `a` accepts the name; an enum or const in `names` lists them.
bool name_allowed(const std::string& name, const json& names, const std::optional<byte_automaton>& a) {
  if (names.contains("const") && names["const"] != json(name)) return false;
  if (names.contains("enum") && names["enum"].is_array() &&
      std::find(names["enum"].begin(), names["enum"].end(), json(name)) == names["enum"].end())
    return false;
  return !a || a->matches(name);
}

// The values of a branch's property that is const or an enum, if the branch requires it.
std::optional<json> tag_values(const json& branch, const std::string& name) {
  if (!branch.is_object() || !branch.contains("properties") || !branch["properties"].is_object()) return std::nullopt;
  const json required = branch.value("required", json::array());
  if (!required.is_array() || std::find(required.begin(), required.end(), json(name)) == required.end())
    return std::nullopt;
  const json& p = branch["properties"].contains(name) ? branch["properties"][name] : json();
  if (!p.is_object()) return std::nullopt;
  if (p.contains("const")) return json::array({p["const"]});
  if (p.contains("enum") && p["enum"].is_array()) return p["enum"];
  return std::nullopt;
}

}  // namespace

void schema_translator::unsupported(const std::string& where, const std::string& what, const std::string& keyword) {
  if (strict_) fail_schema(where, what);
  ignored_.insert(keyword);
}

void schema_translator::check_known_keywords(const json& schema, const std::string& where) {
  for (auto& [key, ignored] : schema.items()) {
    if (!supported.contains(key) && !json_schema_annotation(key))
      unsupported(where, "unsupported JSON Schema keyword '" + key + "'", key);
  }
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

grammar_sequence schema_translator::value(const json& schema, const std::string& where) {
  if (schema.is_boolean()) {
    if (!schema.get<bool>()) fail_schema(where, "a schema that allows nothing (false)");
    return rules_.value();
  }
  if (!schema.is_object()) fail_schema(where, "a schema that is not an object");
  check_known_keywords(schema, where);
  if (schema.contains("allOf")) return value(merge_all_of(schema, document_, where), where);
  if (schema.contains("$ref")) {
    bool only_annotations = true;
    for (auto& [key, unused] : schema.items())
      only_annotations = only_annotations && (key == "$ref" || json_schema_annotation(key));
    if (!only_annotations) {
      json with_siblings = schema;
      with_siblings["allOf"] = json::array({json{{"$ref", schema["$ref"]}}});
      with_siblings.erase("$ref");
      return value(merge_all_of(with_siblings, document_, where), where);
    }
    return reference(schema["$ref"], where + "/$ref");
  }
  if (schema.contains("const")) return rules_.literal(schema["const"]);
  if (schema.contains("enum")) {
    if (!schema["enum"].is_array() || schema["enum"].empty())
      fail_schema(where + "/enum", "an enum that is not a non-empty array");
    std::vector<std::string> texts;
    for (auto& v : schema["enum"]) texts.push_back(rules_.literal_text(v));
    return b_.one_of(std::move(texts));
  }
  if (schema.contains("anyOf")) {
    auto& any_of = schema["anyOf"];
    if (!any_of.is_array() || any_of.empty()) fail_schema(where + "/anyOf", "anyOf that is not a non-empty array");
    std::vector<grammar_sequence> choices;
    for (size_t i = 0; i < any_of.size(); ++i)
      choices.push_back(value(any_of[i], where + "/anyOf/" + std::to_string(i)));
    return b_.rule(std::move(choices));
  }
  if (schema.contains("oneOf")) return one_of(schema, where);
  if (!schema.contains("type")) {
    for (const char* key : {"properties", "patternProperties", "propertyNames", "minProperties", "maxProperties"}) {
      if (schema.contains(key)) return typed(schema, "object", where);
    }
    for (const char* key : {"items", "prefixItems", "minItems", "maxItems"}) {
      if (schema.contains(key)) return typed(schema, "array", where);
    }
    for (const char* key : {"pattern", "format", "minLength", "maxLength"}) {
      if (schema.contains(key)) return typed(schema, "string", where);
    }
    if (has_number_bounds(schema)) return typed(schema, "number", where);
    return rules_.value();
  }
  auto& type = schema["type"];
  if (type.is_string()) return typed(schema, type.get<std::string>(), where);
  if (!type.is_array() || type.empty())
    fail_schema(where + "/type", "a type that is neither a name nor a list of names");
  std::vector<grammar_sequence> choices;
  for (auto& t : type) {
    if (!t.is_string()) fail_schema(where + "/type", "a type that is not a name");
    choices.push_back(typed(schema, t.get<std::string>(), where));
  }
  return b_.rule(std::move(choices));
}

grammar_sequence schema_translator::typed(const json& schema, const std::string& type, const std::string& where) {
  if (type == "string") return string(schema, where);
  if (type == "integer" || type == "number") {
    auto bounded = number_automaton(schema, type == "integer", where);
    if (bounded) return rules_.text_of(*bounded);
    return type == "integer" ? rules_.integer() : rules_.number();
  }
  if (type == "boolean") return b_.rule({b_.literal("true"), b_.literal("false")});
  if (type == "null") return b_.literal("null");
  if (type == "object") return object(schema, where);
  if (type == "array") return array(schema, where);
  fail_schema(where + "/type", "unknown type '" + type + "'");
}

// Branches told apart by a property every one requires with its own const or enum values
// can match one at a time only: anyOf writes them. Others may overlap.
grammar_sequence schema_translator::one_of(const json& schema, const std::string& where) {
  const json& branches = schema["oneOf"];
  if (!branches.is_array() || branches.empty()) fail_schema(where + "/oneOf", "oneOf that is not a non-empty array");
  std::vector<json> resolved;
  for (size_t i = 0; i < branches.size(); ++i) {
    json b = branches[i];
    const std::string at = where + "/oneOf/" + std::to_string(i);
    if (b.is_object() && b.contains("$ref") && b["$ref"].is_string()) {
      const json* target = resolve_reference(document_, b["$ref"].get<std::string>());
      b = target ? *target : json();
    }
    if (b.is_object() && b.contains("allOf")) b = merge_all_of(b, document_, at);
    resolved.push_back(std::move(b));
  }
  bool told_apart = branches.size() == 1;
  if (!told_apart && resolved[0].is_object() && resolved[0].contains("properties") &&
      resolved[0]["properties"].is_object()) {
    for (auto& [name, unused] : resolved[0]["properties"].items()) {
      std::vector<json> seen;
      bool disjoint = true;
      for (auto& b : resolved) {
        auto values = tag_values(b, name);
        if (!values) {
          disjoint = false;
          break;
        }
        for (auto& v : *values) {
          if (std::find(seen.begin(), seen.end(), v) != seen.end()) disjoint = false;
          seen.push_back(v);
        }
      }
      if (disjoint) {
        told_apart = true;
        break;
      }
    }
  }
  if (!told_apart)
    unsupported(
        where + "/oneOf",
        "oneOf whose branches may overlap (supported: branches told apart by a required const or enum property)",
        "oneOf");
  std::vector<grammar_sequence> choices;
  for (size_t i = 0; i < branches.size(); ++i)
    choices.push_back(value(branches[i], where + "/oneOf/" + std::to_string(i)));
  return b_.rule(std::move(choices));
}

std::optional<byte_automaton> schema_translator::string_automaton(const json& schema, const std::string& where) {
  std::optional<byte_automaton> a;
  auto narrow = [&](const byte_automaton& by) { a = a ? narrowed(*a, by, where) : by; };
  if (schema.contains("format")) {
    if (!schema["format"].is_string()) fail_schema(where + "/format", "a format that is not a name");
    // A format the grammar does not know is left to a pattern beside it, as zod writes them
    // ("starts_with" beside "^x-.*").
    auto f = format_automaton(schema["format"].get<std::string>());
    if (f)
      narrow(*f);
    else if (!schema.contains("pattern"))
      unsupported(where + "/format", f.err().message, "format");
  }
  if (schema.contains("pattern")) {
    if (!schema["pattern"].is_string()) fail_schema(where + "/pattern", "a pattern that is not a string");
    auto p = pattern_automaton(schema["pattern"].get<std::string>());
    if (!p)
      unsupported(where + "/pattern", "a pattern that cannot be enforced: " + p.err().message, "pattern");
    else
      narrow(*p);
  }
  if (!a) return std::nullopt;
  if (schema.contains("minLength") || schema.contains("maxLength")) {
    const int min_length = count(schema, "minLength", 0, where), max_length = count(schema, "maxLength", -1, where);
    narrow(character_count_automaton(min_length, max_length));
  }
  if (a->empty()) fail_schema(where, "a string schema that no string meets");
  return a;
}

std::optional<byte_automaton> schema_translator::number_automaton(const json& schema, bool integer,
                                                                  const std::string& where) {
  if (!has_number_bounds(schema)) return std::nullopt;
  auto a = bounded_number_automaton(schema, integer);
  if (!a) fail_schema(where, a.err().message);
  return std::move(a).value();
}

grammar_sequence schema_translator::string(const json& schema, const std::string& where) {
  if (auto a = string_automaton(schema, where)) return rules_.string_of(*a);
  if (!schema.contains("minLength") && !schema.contains("maxLength")) return rules_.string();
  const int min_length = count(schema, "minLength", 0, where), max_length = count(schema, "maxLength", -1, where);
  if (max_length >= 0 && max_length < min_length) fail_schema(where, "maxLength below minLength");
  return rules_.string(min_length, max_length);
}

std::optional<grammar_sequence> schema_translator::extra_member(const json& schema, const std::string& where) {
  const json additional = schema.value("additionalProperties", json(true));
  const json names = schema.value("propertyNames", json::object());
  if (!names.is_object()) fail_schema(where + "/propertyNames", "propertyNames that is not a schema");
  json name_schema = names;
  if (!name_schema.contains("type")) name_schema["type"] = "string";
  if (name_schema["type"] != "string") fail_schema(where + "/propertyNames", "propertyNames whose type is not string");
  std::vector<grammar_sequence> members;
  if (schema.contains("patternProperties")) {
    const json& patterns = schema["patternProperties"];
    if (!patterns.is_object()) fail_schema(where + "/patternProperties", "patternProperties that is not an object");
    if (names.contains("enum") || names.contains("const"))
      fail_schema(where + "/propertyNames", "propertyNames listing names beside patternProperties");
    std::vector<std::string> listed;
    const json properties = schema.value("properties", json::object());
    for (auto& [name, unused] : properties.items()) listed.push_back(name);
    std::optional<byte_automaton> allowed_names = string_automaton(name_schema, where + "/propertyNames");
    std::vector<byte_automaton> compiled;
    for (auto& [pattern, unused] : patterns.items()) {
      auto a = pattern_automaton(pattern);
      if (!a) fail_schema(where + "/patternProperties", "a pattern that cannot be enforced: " + a.err().message);
      compiled.push_back(std::move(a).value());
    }
    size_t i = 0;
    for (auto& [pattern, value_schema] : patterns.items()) {
      // Names of this pattern only (one matching several would owe each its schema), and
      // none of the listed properties.
      byte_automaton name = narrowed(compiled[i], other_than(listed), where);
      for (size_t j = 0; j < compiled.size() && !name.empty(); ++j) {
        if (j != i) name = narrowed(name, complement(compiled[j]), where);
      }
      if (allowed_names && !name.empty()) name = narrowed(name, *allowed_names, where);
      const std::string at = where + "/patternProperties/" + pattern;
      if (!name.empty()) members.push_back(join({rules_.string_of(name), rules_.colon(), value(value_schema, at)}));
      ++i;
    }
    if (members.empty()) return std::nullopt;
  } else {
    if (additional == json(false) || schema.contains("properties")) return std::nullopt;
    members.push_back(join({value(name_schema, where + "/propertyNames"), rules_.colon(),
                            value(additional, where + "/additionalProperties")}));
  }
  return b_.rule(std::move(members));
}

grammar_sequence schema_translator::object(const json& schema, const std::string& where) {
  const json additional = schema.value("additionalProperties", json(true));
  if (!additional.is_boolean() && !additional.is_object())
    fail_schema(where + "/additionalProperties", "additionalProperties that is not a schema");
  const json properties = schema.value("properties", json::object());
  if (!properties.is_object()) fail_schema(where + "/properties", "properties that are not an object");
  std::set<std::string> required;
  for (auto& name : schema.value("required", json::array())) {
    if (!name.is_string() || !properties.contains(name.get<std::string>()))
      fail_schema(where + "/required", "a required property that is not in properties");
    required.insert(name.get<std::string>());
  }
  const int min_count = count(schema, "minProperties", 0, where), max_count = count(schema, "maxProperties", -1, where);

  // The listed members in schema order; a name propertyNames forbids is left out.
  json name_schema = schema.value("propertyNames", json::object());
  if (name_schema.is_object() && !name_schema.contains("type")) name_schema["type"] = "string";
  std::optional<byte_automaton> allowed_names;
  if (name_schema.is_object() && schema.contains("propertyNames"))
    allowed_names = string_automaton(name_schema, where + "/propertyNames");
  struct member {
    grammar_sequence text;
    bool required;
  };
  std::vector<member> members;
  const json pattern_properties = schema.value("patternProperties", json::object());
  for (auto& [name, property] : properties.items()) {
    if (schema.contains("propertyNames") && !name_allowed(name, name_schema, allowed_names)) {
      if (required.contains(name)) fail_schema(where + "/required", "a required property that propertyNames forbids");
      continue;
    }
    json property_schema = property;
    // A listed property whose name a patternProperties pattern matches owes it too.
    for (auto& [pattern, pattern_schema] : pattern_properties.items()) {
      auto a = pattern_automaton(pattern);
      if (a && a->matches(name)) property_schema = json{{"allOf", json::array({property_schema, pattern_schema})}};
    }
    members.push_back(
        {join({rules_.literal(json(name)), rules_.colon(), value(property_schema, where + "/properties/" + name)}),
         required.contains(name)});
  }
  const size_t n = members.size();
  if (size_t(min_count) > n)
    fail_schema(where + "/minProperties",
                "minProperties above the number of listed properties (names written "
                "beyond them could repeat)");

  // R[i][w]: from member i on, w members written (counted up to `cap`; past it, counts
  // need not be told apart). A member follows a comma once one is written.
  const int cap = max_count >= 0 ? max_count : std::max(1, min_count);
  if ((n + 1) * size_t(cap + 1) > max_counted_members)
    fail_schema(where, "minProperties or maxProperties that need too many grammar rules with this many properties");
  auto extras_first = extra_member(schema, where);
  std::optional<grammar_sequence> extras_next;
  if (extras_first) extras_next = join({rules_.separator(), *extras_first});
  // The rest of the object once the listed members are done, w written so far.
  std::vector<grammar_sequence> close(size_t(cap) + 1);
  const auto end = b_.literal("}");
  if (!extras_first) {
    for (int w = 0; w <= cap; ++w) close[size_t(w)] = end;
  } else if (max_count < 0) {
    auto more = b_.repeated(*extras_next);
    auto after_some = join({more, end});
    for (int w = 1; w <= cap; ++w) close[size_t(w)] = b_.rule({after_some});
    close[0] = b_.rule({end, join({*extras_first, after_some})});
  } else {
    close[size_t(cap)] = end;
    for (int w = cap - 1; w >= 0; --w)
      close[size_t(w)] = b_.rule({end, join({w == 0 ? *extras_first : *extras_next, close[size_t(w) + 1]})});
  }
  std::vector<std::vector<grammar_sequence>> from(n + 1, std::vector<grammar_sequence>(size_t(cap) + 1));
  std::vector<std::vector<uint8_t>> meets(n + 1, std::vector<uint8_t>(size_t(cap) + 1, 0));
  for (int w = 0; w <= cap; ++w) {
    meets[n][size_t(w)] = w >= min_count;
    from[n][size_t(w)] = close[size_t(w)];
  }
  for (size_t i = n; i-- > 0;) {
    for (int w = 0; w <= std::min<int>(int(i), cap); ++w) {
      const int after = max_count >= 0 ? w + 1 : std::min(w + 1, cap);
      std::vector<grammar_sequence> alternatives;
      if (after <= cap && meets[i + 1][size_t(after)]) {
        alternatives.push_back(
            join({w > 0 ? rules_.separator() : grammar_sequence{}, members[i].text, from[i + 1][size_t(after)]}));
      }
      if (!members[i].required && meets[i + 1][size_t(w)]) alternatives.push_back(from[i + 1][size_t(w)]);
      if (alternatives.empty()) continue;
      meets[i][size_t(w)] = 1;
      from[i][size_t(w)] = b_.rule(std::move(alternatives));
    }
  }
  if (!meets[0][0]) fail_schema(where, "minProperties or maxProperties that the properties cannot meet");
  return b_.rule({join({b_.literal("{"), from[0][0]})});
}

grammar_sequence schema_translator::array(const json& schema, const std::string& where) {
  int min_items = count(schema, "minItems", 0, where), max_items = count(schema, "maxItems", -1, where);
  if (max_items >= 0 && max_items < min_items) fail_schema(where, "maxItems below minItems");
  if (schema.value("uniqueItems", json(false)) == json(true) && max_items != 0 && max_items != 1)
    unsupported(where + "/uniqueItems", "uniqueItems (a grammar cannot keep items apart) with maxItems above 1",
                "uniqueItems");
  // Draft 2020-12 writes a tuple as prefixItems and the rest as items; earlier drafts as an
  // items array and additionalItems.
  json prefix = schema.value("prefixItems", json::array());
  json rest = schema.value("items", json(true));
  if (rest.is_array()) {
    prefix = rest;
    rest = schema.value("additionalItems", json(true));
  }
  if (!prefix.is_array()) fail_schema(where + "/prefixItems", "prefixItems that is not an array");
  if (prefix.empty()) {
    if (rest == json(false)) max_items = 0;
    if (max_items >= 0 && max_items < min_items) fail_schema(where, "minItems above what items: false allows");
    auto item = rest == json(false) ? grammar_sequence{} : b_.rule({value(rest, where + "/items")});
    return rules_.array(item, min_items, max_items);
  }
  const int p = int(prefix.size());
  if (rest == json(false)) max_items = max_items < 0 ? p : std::min(max_items, p);
  if (max_items >= 0 && max_items < min_items) fail_schema(where, "minItems above the items the tuple allows");
  // R(i): the items from position i on, then ']'; positions up to `last` are written out,
  // and past it the rest repeat.
  const int last = max_items >= 0 ? max_items : std::max(p, min_items);
  std::vector<grammar_sequence> item_at;
  for (int i = 0; i < last; ++i) {
    item_at.push_back(i < p ? value(prefix[size_t(i)], where + "/prefixItems/" + std::to_string(i))
                            : b_.rule({value(rest, where + "/items")}));
  }
  grammar_sequence tail;
  if (max_items < 0 && rest != json(false))
    tail = b_.repeated(join({rules_.separator(), b_.rule({value(rest, where + "/items")})}));
  grammar_sequence after = join({tail, b_.literal("]")});
  for (int i = last; i-- > 0;) {
    auto written = join({i > 0 ? rules_.separator() : grammar_sequence{}, item_at[size_t(i)], after});
    after = i >= min_items ? b_.rule({written, b_.literal("]")}) : b_.rule({written});
  }
  return b_.rule({join({b_.literal("["), after})});
}

// A $ref becomes a rule, declared before it is defined: recursive references work.
grammar_sequence schema_translator::reference(const json& ref, const std::string& where) {
  if (!ref.is_string()) fail_schema(where, "a $ref that is not a string");
  auto target = ref.get<std::string>();
  if (auto found = references_.find(target); found != references_.end())
    return grammar_builder::reference(found->second);
  const json* found = resolve_reference(document_, target);
  if (!found) fail_schema(where, "a $ref that names no #/$defs/ entry ('" + target + "')");
  int32_t index = b_.declare();
  references_[target] = index;
  b_.define(index, {value(*found, target)});
  return grammar_builder::reference(index);
}

}  // namespace troupe
