// The scheduler's choice of a step's work: decodes before prefills, a long prompt in
// chunks of what the token budget leaves, the sequence cap, sequences already in a step
// left out, and micro-batches taking even shares.
#define BOOST_TEST_MODULE batch_policy
#include <boost/test/unit_test.hpp>

#include "engine/batch_policy.hpp"

using namespace troupe;

namespace {

// A decoding sequence: every token but the last one sampled is computed.
sequence_progress decoding(request_id id, int known) { return {id, known, known - 1, false}; }

std::vector<request_id> admitted(const batch_choice& c) { return c.admits; }

}  // namespace

BOOST_AUTO_TEST_CASE(running_sequences_decode_then_waiting_ones_are_admitted) {
  const batch_choice c = choose_batch({8, 100, 1}, {decoding(1, 10), decoding(2, 20)}, {3, 4});
  BOOST_TEST_REQUIRE(c.grows.size() == 2u);
  BOOST_TEST(c.grows[0].id == 1u);
  BOOST_TEST(c.grows[0].positions == 10);
  BOOST_TEST(c.grows[1].id == 2u);
  BOOST_TEST(c.grows[1].positions == 20);
  BOOST_TEST(admitted(c) == (std::vector<request_id>{3, 4}), boost::test_tools::per_element());
  BOOST_TEST(c.budget_left == 98);
}

BOOST_AUTO_TEST_CASE(a_long_prompt_is_prefilled_in_chunks_of_the_budget) {
  // A running prompt of 300 tokens, 100 computed, under a budget of 128 with one decode.
  const batch_choice c = choose_batch({8, 128, 1}, {decoding(1, 50), {2, 300, 100, false}}, {});
  BOOST_TEST_REQUIRE(c.grows.size() == 2u);
  BOOST_TEST(c.grows[1].positions == 100 + 127);
  BOOST_TEST(c.budget_left == 0);
  // With the budget spent nobody waiting is admitted.
  const batch_choice full = choose_batch({8, 128, 1}, {decoding(1, 50), {2, 300, 100, false}}, {3});
  BOOST_TEST(full.admits.empty());
}

BOOST_AUTO_TEST_CASE(the_admitted_prefill_what_the_budget_leaves_and_the_cache_lacks) {
  int budget = 100;
  BOOST_TEST(admitted_tokens(60, 16, budget) == 44);  // 16 tokens found in the prefix cache
  BOOST_TEST(budget == 56);
  BOOST_TEST(admitted_tokens(500, 0, budget) == 56);  // the rest in later steps
  BOOST_TEST(budget == 0);
  BOOST_TEST(admitted_tokens(10, 0, budget) == 0);
}

BOOST_AUTO_TEST_CASE(no_more_sequences_than_the_cap) {
  const batch_choice c = choose_batch({3, 1000, 1}, {decoding(1, 5), decoding(2, 5)}, {3, 4, 5});
  BOOST_TEST(c.grows.size() == 2u);
  BOOST_TEST(admitted(c) == (std::vector<request_id>{3}), boost::test_tools::per_element());
  // Over the cap already (a lowered limit): running ones go on, nobody is admitted.
  const batch_choice over = choose_batch({1, 1000, 1}, {decoding(1, 5), decoding(2, 5)}, {3});
  BOOST_TEST(over.grows.size() == 2u);
  BOOST_TEST(over.admits.empty());
}

BOOST_AUTO_TEST_CASE(sequences_in_a_step_in_flight_are_left_out) {
  std::vector<sequence_progress> running{decoding(1, 5), decoding(2, 5)};
  running[0].in_step = true;
  const batch_choice c = choose_batch({8, 100, 1}, running, {});
  BOOST_TEST_REQUIRE(c.grows.size() == 1u);
  BOOST_TEST(c.grows[0].id == 2u);
  running[1].in_step = true;
  BOOST_TEST(choose_batch({8, 100, 1}, running, {}).empty());
}

BOOST_AUTO_TEST_CASE(micro_batches_take_even_shares) {
  // Four running and two waiting over two micro-batches: three sequences a step.
  std::vector<sequence_progress> running{decoding(1, 5), decoding(2, 5), decoding(3, 5), decoding(4, 5)};
  const batch_choice first = choose_batch({8, 100, 2}, running, {5, 6});
  BOOST_TEST(first.grows.size() == 3u);
  BOOST_TEST(first.admits.empty());
  // The next step, while the first is in flight, takes the rest.
  for (const kv_grow& g : first.grows) running[size_t(g.id - 1)].in_step = true;
  const batch_choice second = choose_batch({8, 100, 2}, running, {5, 6});
  BOOST_TEST(second.grows.size() == 1u);
  BOOST_TEST(second.grows[0].id == 4u);
  BOOST_TEST(admitted(second) == (std::vector<request_id>{5, 6}), boost::test_tools::per_element());
}
