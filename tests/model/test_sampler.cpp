// The CPU sampler: which tokens each filter allows, how often each is drawn, what the
// penalties do, that the draw depends only on (seed, position), and the rule the GPU
// sampler shares: kept tokens walked in id order, ties at a cut to the lower id.
#define BOOST_TEST_MODULE sampler
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "model/sampler.hpp"

using namespace troupe;

namespace {

// Logits of probabilities 0.4, 0.3, 0.15, 0.1, 0.05 for tokens 0..4.
const std::vector<float> logits = {std::log(0.4f), std::log(0.3f), std::log(0.15f), std::log(0.1f), std::log(0.05f)};

// Probabilities 0.1, 0.4, 0.05, 0.3, 0.15: the id order is not the rank order.
const std::vector<float> shuffled = {std::log(0.1f), std::log(0.4f), std::log(0.05f), std::log(0.3f), std::log(0.15f)};

int token_at(const std::vector<float>& l, const sampling_params& p, double u) {
  return sample_with_uniform(l.data(), int(l.size()), p, {}, u).token;
}

std::map<int, int> draw(const sampling_params& p, int count, const token_history& h = {}) {
  std::map<int, int> seen;
  for (int pos = 0; pos < count; ++pos) ++seen[sample(logits.data(), 5, p, h, pos).token];
  return seen;
}

}  // namespace

BOOST_AUTO_TEST_CASE(temperature_zero_is_greedy_and_reports_raw_logprobs) {
  sampling_params p;
  p.temperature = 0;
  p.top_logprobs = 3;
  sampled_token t = sample(logits.data(), 5, p, {}, 0);
  BOOST_TEST(t.token == 0);
  BOOST_TEST(t.logprob == std::log(0.4f), boost::test_tools::tolerance(1e-5f));
  BOOST_REQUIRE(t.top.size() == 3u);
  BOOST_TEST(t.top[1].token == 1);
  BOOST_TEST(t.top[2].logprob == std::log(0.15f), boost::test_tools::tolerance(1e-5f));
}

BOOST_AUTO_TEST_CASE(frequencies_follow_the_distribution) {
  sampling_params p;
  p.seed = 11;
  auto seen = draw(p, 20000);
  const double expected[] = {0.4, 0.3, 0.15, 0.1, 0.05};
  for (int t = 0; t < 5; ++t) BOOST_TEST(std::abs(seen[t] / 20000.0 - expected[t]) < 0.015);
}

BOOST_AUTO_TEST_CASE(the_draw_depends_only_on_seed_and_position) {
  sampling_params a, b;
  a.seed = b.seed = 42;
  for (int pos = 0; pos < 200; ++pos) BOOST_TEST(sample(logits.data(), 5, a, {}, pos).token == sample(logits.data(), 5, b, {}, pos).token);
  b.seed = 43;
  int differ = 0;
  for (int pos = 0; pos < 200; ++pos) differ += sample(logits.data(), 5, a, {}, pos).token != sample(logits.data(), 5, b, {}, pos).token;
  BOOST_TEST(differ > 50);
}

BOOST_AUTO_TEST_CASE(top_k_top_p_and_min_p_limit_the_candidates) {
  sampling_params p;
  p.top_k = 2;
  auto seen = draw(p, 4000);
  BOOST_TEST((std::set<int>{0, 1} == [&] { std::set<int> s; for (auto& [t, n] : seen) s.insert(t); return s; }()));
  BOOST_TEST(std::abs(seen[0] / 4000.0 - 0.4 / 0.7) < 0.03);  // renormalised over the two kept

  p = {};
  p.top_p = 0.8f;  // 0.4 + 0.3 + 0.15 reaches 0.8 at the third token
  seen = draw(p, 4000);
  BOOST_TEST(seen.size() == 3u);
  BOOST_TEST(!seen.count(3));

  p = {};
  p.min_p = 0.3f;  // keep probabilities >= 0.3 * 0.4 = 0.12
  seen = draw(p, 4000);
  BOOST_TEST(seen.size() == 3u);
  BOOST_TEST(!seen.count(3));
}

BOOST_AUTO_TEST_CASE(penalties_push_seen_tokens_down) {
  sampling_params p;
  p.temperature = 0;
  token_history h;
  h.add(0, true);  // token 0 was generated once
  p.frequency_penalty = 0.5f;  // 0.4 -> logit - 0.5: now below token 1's log 0.3
  BOOST_TEST(sample(logits.data(), 5, p, h, 0).token == 1);
  p.frequency_penalty = 0.2f;  // log(0.4) - 0.2 > log(0.3): token 0 stays
  BOOST_TEST(sample(logits.data(), 5, p, h, 0).token == 0);
  p.frequency_penalty = 0;
  p.presence_penalty = 0.5f;
  BOOST_TEST(sample(logits.data(), 5, p, h, 0).token == 1);

  // The repetition penalty also counts prompt tokens; negative logits are multiplied.
  token_history prompt_only;
  prompt_only.add(0, false);
  p = {};
  p.temperature = 0;
  p.repetition_penalty = 1.5f;  // log(0.4) = -0.92 -> -1.37, below log(0.3) = -1.20
  BOOST_TEST(sample(logits.data(), 5, p, prompt_only, 0).token == 1);
  p.frequency_penalty = 1.0f;  // generated-only: the prompt token is not counted again
  p.repetition_penalty = 1.0f;
  BOOST_TEST(sample(logits.data(), 5, p, prompt_only, 0).token == 0);
  // Log-probs stay those of the raw model output, whatever the penalties did.
  p.repetition_penalty = 1.5f;
  p.top_logprobs = 0;
  BOOST_TEST(sample(logits.data(), 5, p, prompt_only, 0).logprob == std::log(0.3f), boost::test_tools::tolerance(1e-5f));
}

BOOST_AUTO_TEST_CASE(the_draw_walks_the_kept_tokens_in_id_order) {
  sampling_params p;
  // Cumulative in id order 0.1, 0.5, 0.55, 0.85, 1 (in rank order, 0.52 would be token 3).
  BOOST_TEST(token_at(shuffled, p, 0.0) == 0);
  BOOST_TEST(token_at(shuffled, p, 0.09) == 0);
  BOOST_TEST(token_at(shuffled, p, 0.52) == 2);
  BOOST_TEST(token_at(shuffled, p, 0.6) == 3);
  BOOST_TEST(token_at(shuffled, p, 0.99) == 4);
  p.top_k = 2;  // keeps 1 and 3, mass 0.7: cumulative 0.4, 0.7
  BOOST_TEST(token_at(shuffled, p, 0.5) == 1);  // target 0.35
  BOOST_TEST(token_at(shuffled, p, 0.6) == 3);  // target 0.42
  p = {};
  p.top_p = 0.8f;  // ranks 1, 3, 4 reach 0.85: cumulative 0.4, 0.7, 0.85
  BOOST_TEST(token_at(shuffled, p, 0.45) == 1);  // target 0.3825
  BOOST_TEST(token_at(shuffled, p, 0.85) == 4);  // target 0.7225
  p = {};
  p.min_p = 0.3f;  // probabilities >= 0.12: the same three
  BOOST_TEST(token_at(shuffled, p, 0.8) == 3);   // target 0.68
  BOOST_TEST(token_at(shuffled, p, 0.85) == 4);
}

BOOST_AUTO_TEST_CASE(ties_at_a_cut_keep_the_lower_ids) {
  const std::vector<float> equal(4, 0.5f);  // four tokens of probability 0.25
  sampling_params p;
  p.top_k = 2;  // keeps 0 and 1
  BOOST_TEST(token_at(equal, p, 0.25) == 0);
  BOOST_TEST(token_at(equal, p, 0.75) == 1);
  BOOST_TEST(token_at(equal, p, 0.999) == 1);
  p = {};
  p.top_p = 0.5f;  // two of 0.25 reach it
  BOOST_TEST(token_at(equal, p, 0.999) == 1);
  p = {};
  p.temperature = 0;
  BOOST_TEST(token_at(equal, p, 0.5) == 0);
}

// More than the first sorted head of 1024: exactly the k best stay, and as u grows the
// chosen id never goes down.
BOOST_AUTO_TEST_CASE(top_k_beyond_the_sorted_head_keeps_exactly_k) {
  const int vocab = 3000, k = 2000;
  std::vector<int> rank(vocab);
  std::iota(rank.begin(), rank.end(), 0);
  std::shuffle(rank.begin(), rank.end(), std::mt19937(5));
  std::vector<float> l(static_cast<size_t>(vocab));
  for (int i = 0; i < vocab; ++i) l[size_t(i)] = -0.001f * float(rank[size_t(i)]);
  sampling_params p;
  p.top_k = k;
  int previous = -1, outside = 0, backwards = 0;
  for (int j = 0; j < 1000; ++j) {
    const int t = token_at(l, p, j / 1000.0);
    outside += rank[size_t(t)] >= k;
    backwards += t < previous;
    previous = t;
  }
  BOOST_TEST(outside == 0);
  BOOST_TEST(backwards == 0);
}
