// vLLM's random dataset: lengths within the range ratio, ids in range, same seed same prompts.
#define BOOST_TEST_MODULE random_dataset
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "bench/random_dataset.hpp"

using namespace troupe::bench;

BOOST_AUTO_TEST_CASE(exact_lengths_without_a_range) {
  auto prompts = random_prompts({50, 32, 8, 0.0, 7, false});
  BOOST_REQUIRE(prompts);
  BOOST_TEST(prompts->size() == 50u);
  for (const auto& p : *prompts) {
    BOOST_TEST(p.input_len == 32);
    BOOST_TEST(p.output_len == 8);
    BOOST_TEST(p.ids.size() == 32u);
    BOOST_TEST(std::all_of(p.ids.begin(), p.ids.end(), [](int id) { return id >= 1000 && id < 100000; }));
  }
  auto again = random_prompts({50, 32, 8, 0.0, 7, false});
  BOOST_TEST(again->front().ids == prompts->front().ids);
  auto other = random_prompts({50, 32, 8, 0.0, 8, false});
  BOOST_TEST(other->front().ids != prompts->front().ids);
}

BOOST_AUTO_TEST_CASE(lengths_spread_within_the_range_ratio) {
  auto prompts = random_prompts({400, 100, 20, 0.5, 1, false});
  BOOST_REQUIRE(prompts);
  int lo = 1 << 30, hi = 0;
  for (const auto& p : *prompts) {
    BOOST_TEST(p.input_len >= 50);
    BOOST_TEST(p.input_len <= 150);
    BOOST_TEST(p.output_len >= 10);
    BOOST_TEST(p.output_len <= 30);
    lo = std::min(lo, p.input_len), hi = std::max(hi, p.input_len);
  }
  BOOST_TEST(hi - lo > 50);  // spread, not pinned
}

BOOST_AUTO_TEST_CASE(text_prompts_have_one_word_per_token) {
  auto prompts = random_prompts({3, 16, 4, 0.0, 0, true});
  BOOST_REQUIRE(prompts);
  for (const auto& p : *prompts) {
    BOOST_TEST(p.ids.empty());
    BOOST_TEST(std::count(p.text.begin(), p.text.end(), ' ') == 15);
  }
}

BOOST_AUTO_TEST_CASE(bad_options) {
  BOOST_TEST(!random_prompts({0, 32, 8, 0.0, 0, false}));
  BOOST_TEST(!random_prompts({1, 0, 8, 0.0, 0, false}));
  BOOST_TEST(!random_prompts({1, 32, 8, 1.0, 0, false}));
  BOOST_TEST(!random_prompts({1, 32, 8, -0.1, 0, false}));
}
