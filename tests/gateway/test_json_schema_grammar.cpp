// JSON Schema to grammar: random walks over allowed tokens (of a small byte vocabulary and
// of the real Qwen3 one) end in JSON that parses and that a small validator accepts for
// the schema; the mask agrees with advance on every token, and the fast mask with the whole
// trie walk on the Qwen3 vocabulary; string lengths and property order are kept, several
// tool calls come only when asked; unsupported keywords and oversized bounds are named.
#define BOOST_TEST_MODULE json_schema_grammar
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gateway/json_schema/json_schema_grammar.hpp"
#include "tests/support/grammar_walk.hpp"
#include "tests/support/json_schema_check.hpp"
#include "tests/support/qwen3_tokenizer.hpp"
#include "text/grammar/grammar_matcher.hpp"

using namespace troupe;
using test::matcher_of;
using test::qwen3_vocabulary;
using test::random_walk;
using test::valid;
using json = nlohmann::json;

namespace {

grammar schema_grammar(const json& schema) {
  auto g = json_schema_grammar(schema);
  BOOST_REQUIRE_MESSAGE(g.ok(), (g.ok() ? "" : g.err().message));
  return std::move(g).value();
}

std::vector<std::string> byte_vocabulary() {
  std::vector<std::string> v;
  for (int c = 0; c < 256; ++c) v.push_back(std::string(1, char(c)));
  for (const char* t : {"\"",  "\": ", ", \"", "true",    "false",    "null",        "{\"", "}",        "\"}", "12",
                        "0.5", "é",    "中",   "\\n",     "\\u00e9",  "\\ud800",     "abc", "\"name\"", "[",   "]",
                        "], ", "-1",   "e+",   "\"red\"", "\"id\": ", "\"tags\": [", "00",  "😀"}) {
    v.push_back(t);
  }
  return v;
}

const json person = json::parse(R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "description": "who"},
    "age": {"type": "integer"},
    "height": {"type": "number"},
    "color": {"enum": ["red", "green", 3, null]},
    "kind": {"const": "person"},
    "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
    "address": {"$ref": "#/$defs/address"},
    "pet": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {"legs": {"type": "integer"}},
                                         "required": ["legs"], "additionalProperties": false}]},
    "flags": {"type": ["boolean", "null"]}
  },
  "required": ["name", "age", "kind", "tags"],
  "additionalProperties": false,
  "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "zip": {"type": "integer"}},
                        "required": ["zip"]}}
})");

const json tree = json::parse(R"({
  "$ref": "#/$defs/node",
  "$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
            "required": ["value"], "additionalProperties": false}}
})");

// The sanitizer build walks once per grammar: each step walks the whole Qwen3 trie.
#ifdef TROUPE_SANITIZED
constexpr uint32_t fast_mask_walks = 1;
#else
constexpr uint32_t fast_mask_walks = 3;
#endif

// Along random walks, the mask of a fresh matcher (no mask of its own kept, the grammar's
// token classes filling as it goes) is the whole trie walk's.
void check_fast_mask(const grammar& g, const std::vector<std::string>& vocabulary, const token_trie& trie) {
  auto compiled = compiled_grammar::compile(g);
  BOOST_REQUIRE(compiled.ok());
  auto shared = std::make_shared<const compiled_grammar>(std::move(compiled).value());
  std::vector<uint64_t> fast, slow;
  for (uint32_t seed = 1; seed <= fast_mask_walks; ++seed) {
    std::mt19937 gen(seed);
    grammar_matcher m(shared);
    std::string text;
    for (int step = 0; step < 200; ++step) {
      grammar_matcher fresh(shared);
      BOOST_REQUIRE(fresh.advance(text));
      fresh.allowed_tokens(trie, fast);
      m.allowed_tokens_by_trie_walk(trie, slow);
      BOOST_REQUIRE_MESSAGE(fast == slow, "after '" << text << "'");
      std::vector<int> allowed;
      for (int id = 0; id < trie.vocab_size(); ++id) {
        if ((slow[size_t(id) / 64] >> (id % 64)) & 1) allowed.push_back(id);
      }
      if (allowed.empty() || (m.accepts_end() && gen() % 4 == 0)) break;
      const auto& token = vocabulary[size_t(allowed[gen() % allowed.size()])];
      BOOST_REQUIRE(m.advance(token));
      text += token;
    }
  }
}

void check_walks(const json& schema, int seeds, bool check_mask = false) {
  auto vocabulary = byte_vocabulary();
  token_trie trie(vocabulary);
  auto m = matcher_of(schema_grammar(schema));
  int finished = 0;
  for (uint32_t seed = 1; seed <= uint32_t(seeds); ++seed) {
    auto text = random_walk(m, trie, vocabulary, seed, 20000, check_mask && seed <= 3);
    if (!text) continue;
    ++finished;
    json value;
    BOOST_REQUIRE_MESSAGE(json::accept(*text), *text);
    value = json::parse(*text);
    BOOST_TEST(valid(value, schema, schema), *text);
  }
  BOOST_TEST(finished >= seeds * 9 / 10);
}

}  // namespace

BOOST_AUTO_TEST_CASE(random_walks_give_valid_objects_of_a_nested_schema) { check_walks(person, 100); }

BOOST_AUTO_TEST_CASE(random_walks_follow_recursive_references) { check_walks(tree, 60); }

BOOST_AUTO_TEST_CASE(random_walks_give_numbers_integers_and_scalars) {
  check_walks(json{{"type", "integer"}}, 100);
  check_walks(json{{"type", "number"}}, 100);
  check_walks(json{{"type", "array"}, {"items", {{"type", "boolean"}}}, {"maxItems", 4}}, 50);
  check_walks(json{{"type", "string"}, {"enum", {"a", "b\"c", "é"}}}, 30);
}

BOOST_AUTO_TEST_CASE(string_lengths_are_bounded_in_characters) {
  check_walks(json::parse(R"({"type": "string", "minLength": 2, "maxLength": 5})"), 100);
  check_walks(json::parse(R"({"type": "string", "minLength": 3})"), 50);
  check_walks(json::parse(R"({"type": "array", "items": {"type": "string", "maxLength": 1}, "maxItems": 3})"), 50);
  auto m = matcher_of(schema_grammar(json::parse(R"({"type": "string", "maxLength": 2})")));
  BOOST_TEST(m.advance("\"\\n\xc3\xa9"));  // an escape and a two-byte character: two characters
  BOOST_TEST(!m.advance("a"));
  BOOST_TEST(m.advance("\""));
}

BOOST_AUTO_TEST_CASE(bounds_past_the_repetition_limit_are_refused) {
  auto g = json_schema_grammar(json::parse(R"({"type": "array", "maxItems": 100000})"));
  BOOST_REQUIRE(!g.ok());
  BOOST_TEST(g.err().message == "maxItems above 1024 at #/maxItems");
  auto s = json_schema_grammar(json::parse(R"({"properties": {"s": {"type": "string", "minLength": 5000}}})"));
  BOOST_REQUIRE(!s.ok());
  BOOST_TEST(s.err().message == "minLength above 1024 at #/properties/s/minLength");
}

BOOST_AUTO_TEST_CASE(properties_are_written_in_the_order_the_schema_gives) {
  auto ordered = nlohmann::ordered_json::parse(R"({"type": "object", "properties": {"zeta": {"type": "integer"},
      "alpha": {"type": "integer"}}, "required": ["zeta", "alpha"]})");
  auto m = matcher_of(json_schema_grammar(ordered).value());
  auto reversed = m;
  BOOST_TEST(m.advance(R"({"zeta": 1, "alpha": 2})"));
  BOOST_TEST(m.accepts_end());
  BOOST_TEST(!reversed.advance(R"({"alpha")"));
}

BOOST_AUTO_TEST_CASE(several_tool_calls_follow_one_another_only_when_asked) {
  const std::string call = "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
  auto one = matcher_of(tool_call_grammar({{"f", nullptr}}).value());
  auto several = matcher_of(tool_call_grammar({{"f", nullptr}}, true).value());
  BOOST_TEST(one.advance(call));
  BOOST_TEST(one.accepts_end());
  BOOST_TEST(!one.can_continue());
  for (int i = 0; i < 3; ++i) {
    BOOST_TEST(several.advance(i == 0 ? call : "\n" + call));
    BOOST_TEST(several.accepts_end());
  }
  BOOST_TEST(!several.advance("\n\n"));
}

BOOST_AUTO_TEST_CASE(the_mask_is_what_advance_takes_along_walks) { check_walks(person, 3, true); }

BOOST_AUTO_TEST_CASE(json_object_mode_gives_objects) {
  auto vocabulary = byte_vocabulary();
  token_trie trie(vocabulary);
  auto m = matcher_of(json_object_grammar());
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    auto text = random_walk(m, trie, vocabulary, seed);
    if (!text) continue;
    json value;
    BOOST_REQUIRE_NO_THROW(value = json::parse(*text));
    BOOST_TEST(value.is_object());
  }
}

BOOST_AUTO_TEST_CASE(integers_exclude_fractions_and_whitespace_is_bounded) {
  auto m = matcher_of(schema_grammar(json::parse(R"({"type":"object","properties":{"a":{"type":"integer"}}})")));
  auto m1 = m;
  BOOST_TEST(m1.advance("{\"a\": 12}"));
  BOOST_TEST(m1.accepts_end());
  auto m2 = m;
  BOOST_TEST(!m2.advance("{\"a\": 1.5"));
  auto m3 = m;
  BOOST_TEST(!m3.advance("{\"a\":  1"));
  auto m4 = m;
  BOOST_TEST(!m4.advance("{ \"a\""));
  auto m5 = m;
  BOOST_TEST(m5.advance("{}"));  // "a" is not required
}

BOOST_AUTO_TEST_CASE(unsupported_keywords_are_named_with_their_place) {
  auto g = json_schema_grammar(json::parse(R"({"type":"object","properties":{"name":{"type":"string","not":{}}}})"));
  BOOST_REQUIRE(!g.ok());
  BOOST_TEST(g.err().message == "unsupported JSON Schema keyword 'not' at #/properties/name");
  auto lookahead = json_schema_grammar(json::parse(R"j({"properties":{"p":{"type":"string","pattern":"a(?!b)"}}})j"));
  BOOST_REQUIRE(!lookahead.ok());
  BOOST_TEST(lookahead.err().message ==
             "a pattern that cannot be enforced: the pattern uses a negative lookahead (?!...), which no grammar can "
             "enforce, at offset 1 at #/properties/p/pattern");
  auto one_of = json_schema_grammar(json::parse(R"({"oneOf":[{"type":"string"},{"type":"integer"}]})"));
  BOOST_REQUIRE(!one_of.ok());
  BOOST_TEST(one_of.err().message.starts_with("oneOf whose branches may overlap"));
  auto ref = json_schema_grammar(json::parse(R"({"$ref":"#/$defs/missing"})"));
  BOOST_REQUIRE(!ref.ok());
  BOOST_TEST(ref.err().message.find("missing") != std::string::npos);
  auto tool = tool_call_grammar({{"f", json::parse(R"({"type":"object","properties":{"x":{"if":{}}}})")}});
  BOOST_REQUIRE(!tool.ok());
  BOOST_TEST(tool.err().message == "tool 'f': unsupported JSON Schema keyword 'if' at #/properties/x");
  auto lenient = tool_call_grammar({{"f", json::parse(R"({"type":"object","properties":{"x":{"if":{}}}})"), false}});
  BOOST_TEST(lenient.ok());
}

BOOST_AUTO_TEST_CASE(number_bounds_are_exact_at_their_edges) {
  auto takes = [](const char* schema, const std::string& text) {
    auto m = matcher_of(schema_grammar(json::parse(schema)));
    return m.advance(text) && m.accepts_end();
  };
  const char* draft4 = R"({"type":"integer","minimum":3,"exclusiveMinimum":true,"maximum":9,"exclusiveMaximum":true})";
  BOOST_TEST(!takes(draft4, "3"));
  BOOST_TEST(takes(draft4, "4"));
  BOOST_TEST(takes(draft4, "8"));
  BOOST_TEST(!takes(draft4, "9"));
  const char* tenth = R"({"type":"number","exclusiveMinimum":0.1,"maximum":0.3})";
  BOOST_TEST(!takes(tenth, "0.1"));
  BOOST_TEST(!takes(tenth, "0.10"));
  BOOST_TEST(takes(tenth, "0.1000001"));
  BOOST_TEST(takes(tenth, "0.3"));
  BOOST_TEST(takes(tenth, "0.300"));
  BOOST_TEST(!takes(tenth, "0.3001"));
  BOOST_TEST(!takes(tenth, "1e-1"));
  const char* zod_int = R"({"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991})";
  BOOST_TEST(takes(zod_int, "-9007199254740991"));
  BOOST_TEST(!takes(zod_int, "-9007199254740992"));
  BOOST_TEST(takes(zod_int, "9007199254740991"));
  BOOST_TEST(!takes(zod_int, "9007199254740992"));
  BOOST_TEST(!takes(zod_int, "1.0"));
  const char* negative = R"({"type":"number","exclusiveMaximum":0})";
  BOOST_TEST(!takes(negative, "0"));
  BOOST_TEST(!takes(negative, "-0"));
  BOOST_TEST(!takes(negative, "-0.0"));
  BOOST_TEST(takes(negative, "-0.01"));
  const char* quarters = R"({"type":"number","multipleOf":0.25})";
  BOOST_TEST(takes(quarters, "-1.75"));
  BOOST_TEST(takes(quarters, "2.5"));
  BOOST_TEST(!takes(quarters, "2.2"));
  BOOST_TEST(!json_schema_grammar(json::parse(R"({"type":"integer","minimum":5,"maximum":4})")).ok());
  BOOST_TEST(json_schema_grammar(json::parse(R"({"type":"integer","multipleOf":0})")).err().message ==
             "multipleOf that is not a positive number at #");
}

BOOST_AUTO_TEST_CASE(qwen3_tool_calls_from_random_walks_parse) {
  auto vocabulary = qwen3_vocabulary();
  token_trie trie(vocabulary);
  json weather = json::parse(R"({"type":"object","properties":{"city":{"type":"string"},
      "unit":{"enum":["celsius","fahrenheit"]},"days":{"type":"integer"}},"required":["city","unit"],
      "additionalProperties":false})");
  json search = json::parse(R"({"type":"object","properties":{"query":{"type":"string"}},"required":["query"]})");
  auto g = tool_call_grammar({{"get_weather", weather}, {"search", search}});
  BOOST_REQUIRE(g.ok());
  auto m = matcher_of(*g);
  int finished = 0;
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    auto text = random_walk(m, trie, vocabulary, seed, 3000);
    if (!text) continue;
    ++finished;
    std::string open = "<tool_call>\n", close = "\n</tool_call>";
    BOOST_REQUIRE(text->starts_with(open));
    BOOST_REQUIRE(text->ends_with(close));
    json call;
    BOOST_REQUIRE_NO_THROW(call = json::parse(text->substr(open.size(), text->size() - open.size() - close.size())));
    BOOST_TEST((call["name"] == "get_weather" || call["name"] == "search"));
    BOOST_TEST(valid(call["arguments"], call["name"] == "search" ? search : weather, weather), *text);
  }
  BOOST_TEST(finished >= 2);
}

BOOST_AUTO_TEST_CASE(qwen3_fast_masks_are_the_trie_walks) {
  auto vocabulary = qwen3_vocabulary();
  token_trie trie(vocabulary);
  check_fast_mask(schema_grammar(person), vocabulary, trie);
  check_fast_mask(schema_grammar(tree), vocabulary, trie);
  json weather = json::parse(R"({"type":"object","properties":{"city":{"type":"string"},
      "days":{"type":"integer"}},"required":["city"]})");
  auto tool = tool_call_grammar({{"get_weather", weather}, {"search", person}});
  BOOST_REQUIRE(tool.ok());
  check_fast_mask(*tool, vocabulary, trie);
  // Automata (formats, patterns, number bounds) and counted object members.
  check_fast_mask(schema_grammar(json::parse(R"({"type":"object","properties":{
      "mail":{"type":"string","format":"email","maxLength":20},"code":{"type":"string","pattern":"^[A-Z]{2}\\d{3}$"},
      "n":{"type":"integer","minimum":-40,"maximum":212},"q":{"type":"number","multipleOf":0.25,"exclusiveMinimum":0},
      "a":{"type":"boolean"},"b":{"type":"null"}},"required":["mail","code","n","q"],
      "maxProperties":5,"additionalProperties":false})")),
                  vocabulary, trie);
  // Strings of bounded length, counted along one walk of a twin run (counted_runs.hpp).
  check_fast_mask(schema_grammar(json::parse(R"({"type":"object","properties":{
      "short":{"type":"string","minLength":3,"maxLength":12},"long":{"type":"string","maxLength":300},
      "named":{"type":"string","minLength":2},"tags":{"type":"array","items":{"type":"string","maxLength":4}}},
      "required":["short","long","named","tags"],"additionalProperties":false})")),
                  vocabulary, trie);
}

// OpenAI's limits: 1,000 enum values, 5,000 properties and 120,000 bytes of names, enum and
// const strings in one schema, counted wherever they sit; past one, a clear refusal before
// anything is compiled.
BOOST_AUTO_TEST_CASE(schemas_past_openais_size_limits_are_refused_before_compiling) {
  nlohmann::ordered_json values = nlohmann::ordered_json::array();
  for (int i = 0; i < 30000; ++i) values.push_back("value-" + std::to_string(i));
  auto big = troupe::json_schema_grammar({{"type", "string"}, {"enum", values}});
  BOOST_REQUIRE(!big);
  BOOST_TEST(big.err().message == "the schema has 30000 enum values; at most 1000 are allowed");

  nlohmann::ordered_json thousand = nlohmann::ordered_json::array();
  for (int i = 0; i < 1000; ++i) thousand.push_back(i);
  BOOST_TEST(troupe::json_schema_grammar({{"enum", thousand}}).ok());
  thousand.push_back(1000);
  auto nested =
      troupe::json_schema_grammar({{"type", "object"}, {"properties", {{"a", {{"anyOf", {{{"enum", thousand}}}}}}}}});
  BOOST_REQUIRE(!nested);
  BOOST_TEST(nested.err().message == "the schema has 1001 enum values; at most 1000 are allowed");

  nlohmann::ordered_json properties = nlohmann::ordered_json::object();
  for (int i = 0; i < 5001; ++i) properties["p" + std::to_string(i)] = {{"type", "integer"}};
  auto wide = troupe::json_schema_grammar({{"type", "object"}, {"properties", properties}});
  BOOST_REQUIRE(!wide);
  BOOST_TEST(wide.err().message == "the schema has 5001 object properties; at most 5000 are allowed");

  auto long_const = troupe::json_schema_grammar({{"const", std::string(120001, 'x')}});
  BOOST_REQUIRE(!long_const);
  BOOST_TEST(long_const.err().message.find("hold 120001 bytes; at most 120000") != std::string::npos);
  auto tools = troupe::tool_call_grammar({{"f", {{"type", "string"}, {"enum", values}}}}, false);
  BOOST_REQUIRE(!tools);
  BOOST_TEST(tools.err().message == "tool 'f': the schema has 30000 enum values; at most 1000 are allowed");
}
