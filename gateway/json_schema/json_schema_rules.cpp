#include "gateway/json_schema/json_schema_rules.hpp"

#include <algorithm>
#include <set>
#include <string_view>
#include <utility>

namespace troupe {

using json = nlohmann::ordered_json;

namespace {

constexpr int max_integer_digits = 16;
constexpr int max_fraction_digits = 16;
constexpr int max_exponent_digits = 2;  // 1e999 overflows a double: parsers reject it

}  // namespace

void fail_schema(const std::string& where, const std::string& what) { throw schema_error{what + " at " + where}; }

bool json_schema_annotation(const std::string& key) {
  static const std::set<std::string> annotations = {
      "title", "description", "default",    "examples", "$schema",   "$id",          "$comment",
      "$defs", "definitions", "deprecated", "readOnly", "writeOnly", "discriminator"};
  return annotations.contains(key);
}

grammar_sequence json_rules::optional_space() {
  if (space_.empty()) space_ = b_.optional(b_.literal(" "));
  return space_;
}

grammar_sequence json_rules::separator() { return join({b_.literal(","), optional_space()}); }

grammar_sequence json_rules::colon() { return join({b_.literal(":"), optional_space()}); }

grammar_sequence json_rules::literal(const json& v) { return b_.literal(literal_text(v)); }

std::string json_rules::literal_text(const json& v) const {
  std::string text = v.dump();
  if (!escape_less_than_) return text;
  // Outside strings JSON has no '<': every one is a string's, and may be escaped.
  std::string escaped;
  for (char c : text) escaped += c == '<' ? std::string("\\u003c") : std::string(1, c);
  return escaped;
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
      join({b_.literal("\\"),
            b_.bytes(
                {{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 'b'}, {'f', 'f'}, {'n', 'n'}, {'r', 'r'}, {'t', 't'}})}),
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
  return b_.rule({join(
      {b_.literal("{"), b_.optional(join({member, b_.repeated(join({separator(), member}))})), b_.literal("}")})});
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
  if (max_items == 0)
    items.clear();
  else if (min_items == 0)
    items = b_.optional(items);
  return b_.rule({join({b_.literal("["), items, b_.literal("]")})});
}

// 0 or a digit 1-9 and at most max_integer_digits - 1 more.
grammar_sequence json_rules::natural() {
  return b_.rule({b_.literal("0"), join({b_.bytes({{'1', '9'}}), up_to(max_integer_digits - 1)})});
}

grammar_sequence json_rules::string_of(const byte_automaton& a) { return automaton(a, true); }

grammar_sequence json_rules::text_of(const byte_automaton& a) { return automaton(a, false); }

grammar_sequence json_rules::automaton(const byte_automaton& a, bool quoted) {
  std::vector<int32_t> rules(a.size());
  for (auto& r : rules) r = b_.declare();
  for (size_t s = 0; s < a.size(); ++s) {
    std::vector<grammar_sequence> alternatives;
    std::vector<std::pair<int32_t, byte_set>> raw;  // by target state
    for (int c = 0; c < 256; ++c) {
      const int32_t to = a.next(int32_t(s), uint8_t(c));
      if (to == byte_automaton::none) continue;
      std::string escape;
      if (quoted) {
        if (c == '"')
          escape = "\\\"";
        else if (c == '\\')
          escape = "\\\\";
        else if (c == '\n')
          escape = "\\n";
        else if (c == '\t')
          escape = "\\t";
        else if (c == '\r')
          escape = "\\r";
        else if (c == '\b')
          escape = "\\b";
        else if (c == '\f')
          escape = "\\f";
        else if (c < 0x20 || (c == '<' && escape_less_than_)) {
          static const char hex[] = "0123456789abcdef";
          escape = std::string("\\u00") + hex[c >> 4] + hex[c & 15];
        }
      }
      if (!escape.empty()) {
        alternatives.push_back(join({b_.literal(escape), grammar_builder::reference(rules[size_t(to)])}));
        continue;
      }
      auto same = std::find_if(raw.begin(), raw.end(), [&](auto& r) { return r.first == to; });
      if (same == raw.end()) same = raw.insert(raw.end(), {to, byte_set{}});
      same->second.add(uint8_t(c), uint8_t(c));
    }
    for (auto& [to, set] : raw)
      alternatives.push_back(join({b_.bytes(set), grammar_builder::reference(rules[size_t(to)])}));
    if (a.accepting(int32_t(s))) alternatives.push_back(quoted ? b_.literal("\"") : grammar_sequence{});
    b_.define(rules[s], std::move(alternatives));
  }
  if (!quoted) return grammar_builder::reference(rules[0]);
  return b_.rule({join({b_.literal("\""), grammar_builder::reference(rules[0])})});
}

// At most `digits` digits.
grammar_sequence json_rules::up_to(int digits) { return b_.repeated(b_.bytes({{'0', '9'}}), 0, digits); }

}  // namespace troupe
