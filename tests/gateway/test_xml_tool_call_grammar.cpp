// Forced tool calls in the xml markup: random walks over allowed tokens (of a small byte
// vocabulary and of the real Qwen3 one) end in calls that the tool-call parser reads into
// offered tools, with arguments that a schema check accepts; the mask agrees with advance;
// calls as Qwen3.5's template renders them are in the grammar; malformed calls (unknown
// tool, missing required parameter, a string holding a closing tag or reading as null)
// are refused; what the markup cannot carry is an error naming it; the request's
// forced tool_choice picks this grammar for the xml format.
#define BOOST_TEST_MODULE xml_tool_call_grammar
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "gateway/output_grammar_json.hpp"
#include "gateway/template_value.hpp"
#include "gateway/tool_call_parser.hpp"
#include "gateway/tool_parameter_type.hpp"
#include "gateway/xml_tool_call_grammar.hpp"
#include "tests/support/grammar_walk.hpp"
#include "tests/support/json_schema_check.hpp"
#include "tests/support/qwen3_tokenizer.hpp"
#include "tests/support/source_dir.hpp"
#include "text/chat_template.hpp"

using namespace troupe;
using test::matcher_of;
using test::random_walk;
using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

namespace {

const ordered_json weather = ordered_json::parse(R"({
  "type": "object",
  "properties": {
    "city": {"type": "string", "minLength": 1, "maxLength": 8},
    "unit": {"enum": ["celsius", "fahrenheit", "42", null]},
    "days": {"type": "integer"},
    "ratio": {"type": ["number", "null"]},
    "metric": {"type": "boolean"},
    "note": {"type": ["string", "null"], "maxLength": 6},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 3},
    "place": {"$ref": "#/$defs/place"},
    "choice": {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 3}]},
    "kind": {"type": "string", "const": "report"},
    "code": {"type": "string", "enum": ["a<b", "x y"]},
    "level": {"type": "integer", "enum": [1, 2, "3"]}
  },
  "required": ["city", "unit", "metric", "kind"],
  "additionalProperties": false,
  "$defs": {"place": {"type": "object", "properties": {"lat": {"type": "number"},
            "name": {"type": "string", "maxLength": 4}}, "required": ["lat"], "additionalProperties": false}}
})");

const ordered_json search = ordered_json::parse(R"({"type": "object", "properties": {
  "query": {"type": "string", "maxLength": 10}, "limit": {"type": "integer"}}, "required": ["query"]})");

const std::vector<tool_schema> tools = {{"get_weather", weather}, {"search", search}, {"ping", nullptr}};

grammar xml_grammar(const std::vector<tool_schema>& offered, bool several = false) {
  auto g = xml_tool_call_grammar(offered, several);
  BOOST_REQUIRE_MESSAGE(g.ok(), (g.ok() ? "" : g.err().message));
  return std::move(g).value();
}

std::vector<std::string> byte_vocabulary() {
  std::vector<std::string> v;
  for (int c = 0; c < 256; ++c) v.push_back(std::string(1, char(c)));
  for (const char* t : {"<tool_call>\n<function=",
                        "get_weather",
                        "search",
                        ">\n",
                        "<parameter=",
                        "city",
                        "query",
                        "\n</parameter>\n",
                        "</function>\n</tool_call>",
                        "\n<tool_call>",
                        "null",
                        "NULL",
                        "Null",
                        "nul",
                        "true",
                        "True",
                        "celsius",
                        "\"42\"",
                        "\\u003c",
                        "</parameter>",
                        "</",
                        "<",
                        "\n",
                        "é",
                        "中",
                        "😀",
                        "[\"",
                        "\"]",
                        "{\"",
                        "}",
                        ", ",
                        ": ",
                        "12",
                        "-3",
                        "0.5"}) {
    v.push_back(t);
  }
  return v;
}

// The tools as a chat request hands them to the parser: each parameter's declared type.
std::shared_ptr<const std::vector<tool_spec>> specs_of(const std::vector<tool_schema>& offered) {
  std::vector<tool_spec> specs;
  for (const tool_schema& t : offered) {
    tool_spec spec{t.name, {}};
    if (t.parameters.is_object() && t.parameters.contains("properties"))
      for (const auto& [name, schema] : t.parameters["properties"].items())
        spec.parameter_types[name] = declared_parameter_type(schema);
    specs.push_back(std::move(spec));
  }
  return std::make_shared<const std::vector<tool_spec>>(std::move(specs));
}

tool_call_parser::output read(const std::string& text, const std::vector<tool_schema>& offered) {
  tool_call_parser parser(tool_call_format::xml, specs_of(offered));
  auto out = parser.push(text);
  auto rest = parser.flush();
  out.content += rest.content;
  out.calls.insert(out.calls.end(), rest.calls.begin(), rest.calls.end());
  return out;
}

// Every block of the text is a call of an offered tool whose arguments match its schema
// (no parameters schema: no arguments); the calls, arguments parsed.
std::vector<std::pair<std::string, json>> check_calls(const std::string& text,
                                                      const std::vector<tool_schema>& offered) {
  auto out = read(text, offered);
  BOOST_TEST(out.content.empty(), "left as content: " << out.content);
  size_t blocks = 0;
  for (size_t at = text.find("<tool_call>"); at != std::string::npos; at = text.find("<tool_call>", at + 1)) ++blocks;
  BOOST_TEST(out.calls.size() == blocks, text);
  std::vector<std::pair<std::string, json>> calls;
  for (const tool_call& c : out.calls) {
    auto tool = std::find_if(offered.begin(), offered.end(), [&](const tool_schema& t) { return t.name == c.name; });
    BOOST_REQUIRE(tool != offered.end());
    const json schema = tool->parameters.is_null() ? json{{"type", "object"}, {"properties", json::object()}}
                                                   : json::parse(tool->parameters.dump());
    const json arguments = json::parse(c.arguments);
    BOOST_TEST(test::valid(arguments, schema, schema), c.name << " " << c.arguments << " from " << text);
    calls.emplace_back(c.name, arguments);
  }
  return calls;
}

std::string read_fixture(const std::string& path) {
  std::ifstream file(test::source_dir() / path);
  return {std::istreambuf_iterator<char>(file), {}};
}

bool takes(const grammar& g, const std::string& text) {
  auto m = matcher_of(g);
  return m.advance(text) && m.accepts_end();
}

}  // namespace

BOOST_AUTO_TEST_CASE(random_walks_give_calls_the_parser_reads_with_valid_arguments) {
  auto vocabulary = byte_vocabulary();
  token_trie trie(vocabulary);
  auto m = matcher_of(xml_grammar(tools));
  std::set<std::string> names;
  std::map<std::string, int> weather_keys;  // how many weather calls had each parameter
  int finished = 0, weather_calls = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    auto text = random_walk(m, trie, vocabulary, seed);
    if (!text) continue;
    ++finished;
    auto calls = check_calls(*text, tools);
    BOOST_REQUIRE(calls.size() == 1);
    names.insert(calls[0].first);
    if (calls[0].first != "get_weather") continue;
    ++weather_calls;
    for (auto& [key, ignored] : calls[0].second.items()) ++weather_keys[key];
  }
  BOOST_TEST(finished >= 270);
  BOOST_TEST(names.size() == 3);
  // Required parameters always, every optional one sometimes and not always.
  for (const char* key : {"city", "unit", "metric", "kind"}) BOOST_TEST(weather_keys[key] == weather_calls, key);
  for (const char* key : {"days", "ratio", "note", "tags", "place", "choice", "code", "level"}) {
    BOOST_TEST(weather_keys[key] > 0, key);
    BOOST_TEST(weather_keys[key] < weather_calls, key);
  }
}

BOOST_AUTO_TEST_CASE(patterns_formats_and_bounds_hold_in_raw_parameters) {
  const std::vector<tool_schema> bounded = {{"book", ordered_json::parse(R"({"type": "object", "properties": {
      "code": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{2}$"}, "day": {"type": "string", "format": "date"},
      "seats": {"type": "integer", "minimum": 1, "maximum": 12}, "word": {"type": "string", "pattern": "^[nN][uU].*$",
      "maxLength": 4}}, "required": ["code", "day", "seats", "word"]})")}};
  auto vocabulary = byte_vocabulary();
  token_trie trie(vocabulary);
  auto m = matcher_of(xml_grammar(bounded));
  const std::regex code("[A-Z]{2}[0-9]{2}"), day("[0-9]{4}-[0-9]{2}-[0-9]{2}");
  int finished = 0;
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    auto text = random_walk(m, trie, vocabulary, seed);
    if (!text) continue;
    ++finished;
    auto out = read(*text, bounded);
    BOOST_REQUIRE(out.calls.size() == 1);
    const json arguments = json::parse(out.calls[0].arguments);
    BOOST_TEST(std::regex_match(arguments["code"].get<std::string>(), code), *text);
    BOOST_TEST(std::regex_match(arguments["day"].get<std::string>(), day), *text);
    BOOST_TEST((arguments["seats"] >= 1 && arguments["seats"] <= 12), *text);
    // Raw text never reads back as null, whatever the pattern allows.
    BOOST_TEST(arguments["word"].is_string(), *text);
  }
  BOOST_TEST(finished >= 50);
}

BOOST_AUTO_TEST_CASE(several_calls_follow_one_another_only_when_asked) {
  auto vocabulary = byte_vocabulary();
  token_trie trie(vocabulary);
  auto several = matcher_of(xml_grammar(tools, true));
  int with_more = 0;
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    auto text = random_walk(several, trie, vocabulary, seed);
    if (!text) continue;
    with_more += check_calls(*text, tools).size() > 1;
  }
  BOOST_TEST(with_more > 0);
  const std::string call = "<tool_call>\n<function=ping>\n</function>\n</tool_call>";
  auto one = matcher_of(xml_grammar(tools));
  BOOST_TEST(one.advance(call));
  BOOST_TEST(one.accepts_end());
  BOOST_TEST(!one.can_continue());
  auto more = matcher_of(xml_grammar(tools, true));
  BOOST_TEST(more.advance(call + "\n" + call));
  BOOST_TEST(more.accepts_end());
  BOOST_TEST(!more.advance("\n\n"));
}

BOOST_AUTO_TEST_CASE(the_mask_is_what_advance_takes_along_walks) {
  auto vocabulary = byte_vocabulary();
  token_trie trie(vocabulary);
  auto m = matcher_of(xml_grammar(tools, true));
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    auto text = random_walk(m, trie, vocabulary, seed, 20000, /*check_mask=*/true);
    BOOST_REQUIRE(text);
    check_calls(*text, tools);
  }
}

BOOST_AUTO_TEST_CASE(qwen3_random_walks_give_calls_the_parser_reads) {
  auto vocabulary = test::qwen3_vocabulary();
  token_trie trie(vocabulary);
  auto m = matcher_of(xml_grammar(tools));
  int finished = 0;
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    auto text = random_walk(m, trie, vocabulary, seed, 3000);
    if (!text) continue;
    ++finished;
    BOOST_TEST(check_calls(*text, tools).size() == 1);
  }
  BOOST_TEST(finished >= 2);
}

BOOST_AUTO_TEST_CASE(malformed_calls_are_refused) {
  const auto g = xml_grammar(tools);
  const std::string search_call = "<tool_call>\n<function=search>\n<parameter=query>\nrain\n</parameter>\n";
  BOOST_TEST(takes(g, search_call + "</function>\n</tool_call>"));
  auto m = matcher_of(g);
  BOOST_TEST(!m.advance("<tool_call>\n<function=get_wether>"));                        // not an offered tool
  BOOST_TEST(!takes(g, "<tool_call>\n<function=search>\n</function>\n</tool_call>"));  // query is required
  BOOST_TEST(!takes(g,
                    "<tool_call>\n<function=search>\n<parameter=limit>\n3\n</parameter>\n"
                    "<parameter=query>\nrain\n</parameter>\n</function>\n</tool_call>"));  // not in schema order
  BOOST_TEST(
      !takes(g, search_call + "<parameter=page>\n2\n</parameter>\n</function>\n</tool_call>"));  // not a property
  BOOST_TEST(!takes(g, search_call + "<parameter=limit>\n1.5\n</parameter>\n</function>\n</tool_call>"));
  auto value = [&](const std::string& text) {
    return "<tool_call>\n<function=search>\n<parameter=query>\n" + text + "\n</parameter>\n</function>\n</tool_call>";
  };
  BOOST_TEST(!takes(g, value("a</parameter>")));
  BOOST_TEST(!takes(g, value("a<b")));  // free text never holds '<'
  for (const char* reads_as_null : {"null", "NULL", "Null"}) BOOST_TEST(!takes(g, value(reads_as_null)), reads_as_null);
  for (const char* text : {"", "nul", "nulls", "a null", "two\nlines", "\nedge\n", "中文 😀"}) {
    BOOST_TEST_CONTEXT(text) {
      BOOST_REQUIRE(takes(g, value(text)));
      auto calls = check_calls(value(text), tools);
      BOOST_REQUIRE(calls.size() == 1);
      BOOST_TEST(calls[0].second["query"] == text);  // read back exactly
    }
  }
}

BOOST_AUTO_TEST_CASE(nullable_values_and_untyped_enums_read_back_as_written) {
  const ordered_json schema = ordered_json::parse(R"({"type": "object", "properties": {
    "note": {"type": ["string", "null"]}, "unit": {"enum": ["celsius", "42", "NULL", null]},
    "days": {"type": ["integer", "null"]}}})");
  const std::vector<tool_schema> one = {{"f", schema}};
  const auto g = xml_grammar(one);
  auto call = [](const std::string& parameter, const std::string& text) {
    return "<tool_call>\n<function=f>\n<parameter=" + parameter + ">\n" + text +
           "\n</parameter>\n</function>\n</tool_call>";
  };
  BOOST_TEST(check_calls(call("note", "null"), one)[0].second["note"].is_null());
  BOOST_TEST(check_calls(call("days", "null"), one)[0].second["days"].is_null());
  BOOST_TEST(takes(g, call("unit", "celsius")));  // raw, as the template writes a string
  BOOST_TEST(!takes(g, call("unit", "42")));      // raw 42 would read back as a number
  BOOST_TEST(check_calls(call("unit", "\"42\""), one)[0].second["unit"] == "42");
  BOOST_TEST(check_calls(call("unit", "\"NULL\""), one)[0].second["unit"] == "NULL");
  BOOST_TEST(!takes(g, call("unit", "\"celsius\"")));
}

BOOST_AUTO_TEST_CASE(calls_as_the_qwen3_5_template_renders_them_are_in_the_grammar) {
  const ordered_json plan = ordered_json::parse(R"({"type": "object", "properties": {
    "title": {"type": "string"}, "steps": {"type": "array", "items": {"type": "object",
    "properties": {"n": {"type": "integer"}, "what": {"type": "string"}}}}, "budget": {"type": "number"},
    "owner": {"type": ["string", "null"]}}, "required": ["title"]})");
  const std::vector<tool_schema> offered = {{"search", search}, {"plan", plan}};
  const ordered_json first = {{"query", "two words"}, {"limit", 5}};
  const ordered_json second = ordered_json::parse(
      R"({"title": "Trip to 東京\nday one", "steps": [{"n": 1, "what": "fly"}, {"n": 2, "what": "eat"}], "budget": 1200.5})");
  const ordered_json messages = {{{"role", "user"}, {"content", "plan it"}},
                                 {{"role", "assistant"},
                                  {"content", ""},
                                  {"tool_calls",
                                   {{{"type", "function"}, {"function", {{"name", "search"}, {"arguments", first}}}},
                                    {{"type", "function"}, {"function", {{"name", "plan"}, {"arguments", second}}}}}}}};
  auto qwen3_5 =
      chat_template::from_source(read_fixture("tests/text/templates/qwen3_5.jinja"), std::nullopt, std::nullopt);
  BOOST_REQUIRE(qwen3_5.ok());
  auto prompt = qwen3_5->render(to_template_value(messages), jinja::value(), false);
  BOOST_REQUIRE(prompt.ok());
  const size_t begin = prompt->find("<tool_call>"),
               end = prompt->rfind("</tool_call>") + std::string("</tool_call>").size();
  BOOST_REQUIRE(begin != std::string::npos);
  const std::string rendered = prompt->substr(begin, end - begin);
  BOOST_TEST(takes(xml_grammar(offered, true), rendered), rendered);
  auto calls = check_calls(rendered, offered);
  BOOST_REQUIRE(calls.size() == 2);
  BOOST_TEST(calls[0].second == json::parse(first.dump()));
  BOOST_TEST(calls[1].second == json::parse(second.dump()));
}

BOOST_AUTO_TEST_CASE(what_the_markup_cannot_carry_is_an_error_naming_it) {
  auto error_of = [](const std::string& name, const char* parameters) {
    auto g = xml_tool_call_grammar({{name, ordered_json::parse(parameters)}});
    return g.ok() ? std::string("no error") : g.err().message;
  };
  BOOST_TEST(error_of("f", R"({"properties": {"x": {"type": "string", "not": {}}}})") ==
             "tool 'f': unsupported JSON Schema keyword 'not' at #/properties/x");
  BOOST_TEST(error_of("f", R"({"properties": {"x": {"type": "object", "properties": {"y": {"if": {}}}}}})") ==
             "tool 'f': unsupported JSON Schema keyword 'if' at #/properties/x/properties/y");
  BOOST_TEST(error_of("f", R"({"properties": {"x": {"type": "string", "pattern": "^</"}}})") ==
             "tool 'f': a string schema that no raw text an xml tool call can write meets at #/properties/x");
  BOOST_TEST(error_of("f", R"({"minProperties": 1, "properties": {"x": {"type": "string"}}})") ==
             "tool 'f': 'minProperties' in the parameters of an xml tool call (they are an object's properties) at "
             "#/minProperties");
  BOOST_TEST(error_of("f", R"({"anyOf": [{"type": "object"}]})") ==
             "tool 'f': 'anyOf' in the parameters of an xml tool call (they are an object's properties) at #/anyOf");
  BOOST_TEST(error_of("f", R"({"type": "array"})") == "tool 'f': parameters that are not an object at #/type");
  BOOST_TEST(error_of("f", R"({"properties": {"a>b": {"type": "string"}}})").find("at #/properties/a>b") !=
             std::string::npos);
  BOOST_TEST(error_of("f", R"({"properties": {"x": {"type": "string", "enum": ["ok", "</parameter>"]}}})")
                 .find("cannot write raw") != std::string::npos);
  BOOST_TEST(error_of("f", R"({"properties": {"x": {"type": "string", "maxLength": 5000}}})") ==
             "tool 'f': maxLength above 1024 at #/properties/x/maxLength");
  BOOST_TEST(error_of("f", R"({"properties": {"x": {"type": "integer", "enum": ["a"]}}})") ==
             "tool 'f': an enum or const with no integer to write at #/properties/x");
  BOOST_TEST(error_of(" f", "{}").starts_with("tool ' f': a name that the xml markup cannot carry"));
  BOOST_TEST(xml_tool_call_grammar({}).err().message == "no tools to call");
}

BOOST_AUTO_TEST_CASE(a_forced_tool_choice_takes_the_markup_of_the_template) {
  const ordered_json offered = ordered_json::parse(R"([{"type": "function", "function": {"name": "search",
      "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}])");
  const std::string xml_call =
      "<tool_call>\n<function=search>\n<parameter=query>\nrain\n</parameter>\n</function>\n</tool_call>";
  const std::string hermes_call =
      "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"rain\"}}\n</tool_call>";
  auto xml = forced_tool_call_grammar(offered, "search", false, tool_call_format::xml);
  auto hermes = forced_tool_call_grammar(offered, "search", false, tool_call_format::hermes);
  BOOST_REQUIRE(xml.ok());
  BOOST_REQUIRE(hermes.ok());
  BOOST_TEST(takes(*xml, xml_call));
  BOOST_TEST(!takes(*xml, hermes_call));
  BOOST_TEST(takes(*hermes, hermes_call));
  const ordered_json unsupported =
      ordered_json::parse(R"([{"type": "function", "function": {"name": "f", "strict": true,
      "parameters": {"type": "object", "properties": {"x": {"type": "integer", "not": {}}}}}}])");
  auto refused = forced_tool_call_grammar(unsupported, "", true, tool_call_format::xml);
  BOOST_REQUIRE(!refused.ok());
  BOOST_TEST(refused.err().status == 400);
  BOOST_TEST(refused.err().param == "tools");
  BOOST_TEST(refused.err().message.find("tool 'f': unsupported JSON Schema keyword 'not'") != std::string::npos);
}
