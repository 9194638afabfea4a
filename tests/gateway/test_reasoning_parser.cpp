// <think> blocks split from the answer, whole and in random pieces of 1..7 bytes.
#define BOOST_TEST_MODULE reasoning_parser
#include <boost/test/unit_test.hpp>

#include <random>

#include "gateway/reasoning_parser.hpp"

using namespace troupe;

namespace {

reasoning_parser::output add(reasoning_parser::output a, const reasoning_parser::output& b) {
  a.reasoning += b.reasoning;
  a.content += b.content;
  return a;
}

reasoning_parser::output whole(const std::string& text, bool starts_in_reasoning) {
  reasoning_parser p(starts_in_reasoning);
  const auto out = p.push(text);
  return add(out, p.flush());
}

// Fed in random pieces, the result must equal the whole-text one.
reasoning_parser::output pieces(const std::string& text, bool starts_in_reasoning, uint32_t seed) {
  reasoning_parser p(starts_in_reasoning);
  std::mt19937 gen(seed);
  std::uniform_int_distribution<size_t> size(1, 7);
  reasoning_parser::output out;
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::min(size(gen), text.size() - at);
    out = add(out, p.push(std::string_view(text).substr(at, n)));
    at += n;
  }
  return add(out, p.flush());
}

void check(const std::string& text, bool starts_in_reasoning, const std::string& reasoning,
           const std::string& content) {
  const auto w = whole(text, starts_in_reasoning);
  BOOST_TEST(w.reasoning == reasoning);
  BOOST_TEST(w.content == content);
  for (uint32_t seed = 0; seed < 50; ++seed) {
    const auto p = pieces(text, starts_in_reasoning, seed);
    BOOST_TEST(p.reasoning == reasoning, "seed " << seed);
    BOOST_TEST(p.content == content, "seed " << seed);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(closed_think_block) {
  check("<think>\nThe user greets me. I greet back.\n</think>\n\nHello! How can I help?", false,
        "The user greets me. I greet back.", "Hello! How can I help?");
}

BOOST_AUTO_TEST_CASE(empty_think_block_of_a_non_thinking_reply) {
  check("<think>\n\n</think>\n\nHi.", false, "", "Hi.");
}

BOOST_AUTO_TEST_CASE(unclosed_think_block_stays_reasoning) {
  check("<think>\nLet me count: 1, 2, 3", false, "Let me count: 1, 2, 3", "");
}

BOOST_AUTO_TEST_CASE(starting_in_reasoning_only_the_close_tag_comes) {
  check("用户问天气。我应该调用工具。\n</think>\n\n北京今天晴。", true, "用户问天气。我应该调用工具。", "北京今天晴。");
  check("still thinking < not a tag </thin", true, "still thinking < not a tag </thin", "");
}

BOOST_AUTO_TEST_CASE(no_reasoning_at_all) {
  check("Just an answer with <b>markup</b>.", false, "", "Just an answer with <b>markup</b>.");
  check("<thin", false, "", "<thin");
}

// An answer keeps its leading whitespace (indented code); after `</think>` only the two
// newlines the template writes there go.
BOOST_AUTO_TEST_CASE(the_answer_is_byte_exact) {
  check("    indented();\n", false, "", "    indented();\n");
  check("\n\nTwo blank lines first.", false, "", "\n\nTwo blank lines first.");
  check("<think>\nhm\n</think>\n\n    indented();", false, "hm", "    indented();");
  check("<think>\nhm\n</think>\n\n\nA third newline stays.", false, "hm", "\nA third newline stays.");
  check("<think>\nhm\n</think>\n  one newline, then spaces", false, "hm", "  one newline, then spaces");
  check("<think>\nhm\n</think> right after", false, "hm", " right after");
  check("hm\n</think>\n\n\tTabbed.", true, "hm", "\tTabbed.");
}

BOOST_AUTO_TEST_CASE(think_tag_later_in_the_answer_is_answer_text) {
  check("Use <think> tags to reason.", false, "", "Use <think> tags to reason.");
}

BOOST_AUTO_TEST_CASE(tool_call_markup_after_reasoning_goes_to_the_content) {
  check("<think>\nI need the weather.\n</think>\n\n<tool_call>\n{\"name\": \"w\"}\n</tool_call>", false,
        "I need the weather.", "<tool_call>\n{\"name\": \"w\"}\n</tool_call>");
}

BOOST_AUTO_TEST_CASE(prompt_opens_reasoning) {
  BOOST_TEST(reasoning_parser::prompt_opens_reasoning("<|im_start|>assistant\n<think>\n"));
  BOOST_TEST(!reasoning_parser::prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  BOOST_TEST(!reasoning_parser::prompt_opens_reasoning("<|im_start|>assistant\n"));
  BOOST_TEST(
      reasoning_parser::prompt_opens_reasoning("<think>\nold\n</think>\nanswer<|im_start|>assistant\n<think>\n"));
}
