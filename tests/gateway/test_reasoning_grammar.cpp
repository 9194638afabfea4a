// A reply that starts inside <think>: any reasoning up to the first </think>, then the
// answer's grammar; random walks end in a reasoning part without the tag and an answer
// that parses.
#define BOOST_TEST_MODULE reasoning_grammar
#include <boost/test/unit_test.hpp>

#include <memory>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "gateway/json_schema/json_schema_grammar.hpp"
#include "gateway/reasoning_grammar.hpp"
#include "tests/support/grammar_walk.hpp"
#include "text/grammar/grammar_matcher.hpp"

using namespace troupe;
using test::matcher_of;

namespace {

bool takes(grammar_matcher m, const std::string& text, bool whole) {
  return m.advance(text) && (!whole || m.accepts_end());
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_answer_grammar_starts_after_the_first_close_tag) {
  const auto m = matcher_of(after_reasoning(json_object_grammar()));
  BOOST_TEST(takes(m, "Hmm, <think> or </thin>k, <</think>\n\n{\"a\": 1}", true));
  BOOST_TEST(takes(m, "</think>{}", true));
  BOOST_TEST(takes(m, "{\"not\": \"yet the answer\"}", false));  // still reasoning
  BOOST_TEST(!takes(m, "{\"not\": \"yet\"}", true));
  BOOST_TEST(!takes(m, "ok</think>not json", false));
  BOOST_TEST(!takes(m, "ok</think>\n\n\n{}", false));  // at most two newlines
  BOOST_TEST(!takes(m, "ok</think>{}</think>", false));
}

BOOST_AUTO_TEST_CASE(random_walks_split_into_reasoning_and_a_valid_answer) {
  const auto start = matcher_of(
      after_reasoning(json_schema_grammar(nlohmann::ordered_json::parse(R"({"enum": ["yes", "no"]})")).value()));
  const std::string pieces[] = {"a",  " ",       "<",      "/",  "</", "</think", ">",   "think",
                                "\n", "\"yes\"", "\"no\"", "\"", "y",  "es\"",    "no\""};
  std::mt19937 gen(3);
  int finished = 0;
  for (int walk = 0; walk < 200; ++walk) {
    auto m = start;
    std::string text;
    for (int step = 0; step < 1000 && !m.accepts_end(); ++step) {
      const std::string& piece = pieces[gen() % std::size(pieces)];
      if (m.advance(piece)) text += piece;
    }
    if (!m.accepts_end()) continue;
    ++finished;
    const size_t close = text.find("</think>");
    BOOST_REQUIRE(close != std::string::npos);
    std::string answer = text.substr(close + 8);
    while (!answer.empty() && answer.front() == '\n') answer.erase(0, 1);
    BOOST_TEST((answer == "\"yes\"" || answer == "\"no\""), text);
  }
  BOOST_TEST(finished > 190);
}
