// What a generation request must fit at admission: each refusal with its status, field and
// message, in the order they are checked, and a request that fits passes.
#define BOOST_TEST_MODULE generation_limits
#include <boost/test/unit_test.hpp>

#include "gateway/generation_limits.hpp"

using namespace troupe;

namespace {

const std::vector<int> eos = {7};
const generation_limits limits{100, 32, 4, eos};

generation_options options(int max_tokens = 8) {
  generation_options o;
  o.max_tokens = max_tokens;
  return o;
}

std::vector<generation_call::choice_prompt> prompts(std::vector<std::vector<int>> ids) {
  std::vector<generation_call::choice_prompt> p;
  for (auto& i : ids) p.push_back({std::move(i), {}});
  return p;
}

grammar some_grammar() {
  grammar g;
  g.rules.push_back({{grammar_alternative{}}});
  return g;
}

void check_refusal(const std::optional<api_error>& e, int status, const std::string& param,
                   const std::string& message) {
  BOOST_REQUIRE(e);
  BOOST_TEST(e->status == status);
  BOOST_TEST(e->param == param);
  BOOST_TEST(e->message == message);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_request_that_fits_passes) {
  BOOST_TEST(!check_generation(limits, 0, api_kind::completion, options(), prompts({{1, 2, 3}})));
  // Up to the pending limit, with the sequences already in flight.
  auto o = options();
  o.n = 2;
  BOOST_TEST(!check_generation(limits, 2, api_kind::completion, o, prompts({{1}})));
  // A prompt and max_tokens that fill the context exactly; ids at both ends of the vocabulary.
  BOOST_TEST(!check_generation(limits, 0, api_kind::chat, options(30), prompts({{0, 99}})));
  o = options();
  o.sampling.logit_bias = {{99, -100.0f}};
  o.output_grammar = some_grammar();
  BOOST_TEST(!check_generation(limits, 0, api_kind::completion, o, prompts({{1}})));
}

BOOST_AUTO_TEST_CASE(more_sequences_than_the_server_takes_are_a_400) {
  auto o = options();
  o.n = 5;
  check_refusal(check_generation(limits, 0, api_kind::completion, o, prompts({{1}})), 400, "n",
                "the request asks for 5 sequences (prompts x n); this server takes at most 4 at once");
  o.n = 3;
  check_refusal(check_generation(limits, 0, api_kind::completion, o, prompts({{1}, {2}})), 400, "prompt",
                "the request asks for 6 sequences (prompts x n); this server takes at most 4 at once");
}

BOOST_AUTO_TEST_CASE(sequences_past_those_pending_are_a_429) {
  auto o = options();
  o.n = 2;
  const auto e = check_generation(limits, 3, api_kind::completion, o, prompts({{1}}));
  check_refusal(e, 429, "", "the server has too many requests queued; retry later");
  BOOST_TEST(e->type == "rate_limit_error");
}

BOOST_AUTO_TEST_CASE(ids_outside_the_vocabulary_are_a_400) {
  auto o = options();
  o.sampling.logit_bias = {{100, 1.0f}};
  check_refusal(check_generation(limits, 0, api_kind::completion, o, prompts({{1}})), 400, "logit_bias",
                "token id 100 is outside the vocabulary (0..99)");
  check_refusal(check_generation(limits, 0, api_kind::completion, options(), prompts({{1}, {2, 100}})), 400, "prompt",
                "token id 100 is outside the vocabulary (0..99)");
  check_refusal(check_generation(limits, 0, api_kind::chat, options(), prompts({{-1}})), 400, "prompt",
                "token id -1 is outside the vocabulary (0..99)");
}

BOOST_AUTO_TEST_CASE(an_empty_prompt_is_a_400) {
  check_refusal(check_generation(limits, 0, api_kind::completion, options(), prompts({{1}, {}})), 400, "prompt",
                "the prompt is empty");
}

BOOST_AUTO_TEST_CASE(past_the_context_length_names_the_field_to_shorten) {
  // The prompt fits alone: max_tokens is to shorten.
  auto e = check_generation(limits, 0, api_kind::completion, options(30), prompts({{1, 2, 3}}));
  check_refusal(e, 400, "max_tokens",
                "This model's maximum context length is 32 tokens. However, you requested 33 tokens (3 in the "
                "prompt, 30 in the completion). Please reduce the length of the prompt or the completion.");
  BOOST_TEST(e->code == "context_length_exceeded");
  // The prompt alone fills the context: chat names its messages.
  e = check_generation(limits, 0, api_kind::chat, options(1), prompts({std::vector<int>(32, 1)}));
  check_refusal(e, 400, "messages",
                "This model's maximum context length is 32 tokens. However, you requested 33 tokens (32 in the "
                "messages, 1 in the completion). Please reduce the length of the messages or the completion.");
  BOOST_TEST(e->code == "context_length_exceeded");
}

BOOST_AUTO_TEST_CASE(a_constrained_output_needs_an_end) {
  auto o = options();
  o.output_grammar = some_grammar();
  o.ignore_eos = true;
  const generation_limits no_eos{100, 32, 4, {}};
  check_refusal(check_generation(no_eos, 0, api_kind::completion, o, prompts({{1}})), 400, "response_format",
                "this model has no end-of-sequence token to end a constrained output");
  // A stop id of the request's own ends it too.
  o.stop_token_ids = {5};
  BOOST_TEST(!check_generation(no_eos, 0, api_kind::completion, o, prompts({{1}})));
}

BOOST_AUTO_TEST_CASE(the_stop_ids_take_eos_unless_ignored_but_always_when_constrained) {
  auto o = options();
  o.stop_token_ids = {5};
  BOOST_TEST(stop_ids(o, eos) == (std::vector<int>{5, 7}));
  o.ignore_eos = true;
  BOOST_TEST(stop_ids(o, eos) == (std::vector<int>{5}));
  o.output_grammar = some_grammar();
  BOOST_TEST(stop_ids(o, eos) == (std::vector<int>{5, 7}));
}
