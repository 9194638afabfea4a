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
  for (int pos = 0; pos < 200; ++pos)
    BOOST_TEST(sample(logits.data(), 5, a, {}, pos).token == sample(logits.data(), 5, b, {}, pos).token);
  b.seed = 43;
  int differ = 0;
  for (int pos = 0; pos < 200; ++pos)
    differ += sample(logits.data(), 5, a, {}, pos).token != sample(logits.data(), 5, b, {}, pos).token;
  BOOST_TEST(differ > 50);
}

BOOST_AUTO_TEST_CASE(top_k_top_p_and_min_p_limit_the_candidates) {
  sampling_params p;
  p.top_k = 2;
  auto seen = draw(p, 4000);
  BOOST_TEST((std::set<int>{0, 1} == [&] {
    std::set<int> s;
    for (auto& [t, n] : seen) s.insert(t);
    return s;
  }()));
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
  h.add(0, true);              // token 0 was generated once
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
  BOOST_TEST(sample(logits.data(), 5, p, prompt_only, 0).logprob == std::log(0.3f),
             boost::test_tools::tolerance(1e-5f));
}

// OpenAI's logit_bias: added to the logits before the penalties (vLLM's order); -100 bans a
// token, +100 forces it; the draw follows the biased distribution; log-probs stay raw.
BOOST_AUTO_TEST_CASE(logit_bias_moves_the_logits_before_the_penalties) {
  sampling_params p;
  p.temperature = 0;
  p.logit_bias = {{0, -100.0f}};
  BOOST_TEST(sample(logits.data(), 5, p, {}, 0).token == 1);
  p.logit_bias = {{4, 100.0f}};
  p.top_logprobs = 0;
  const sampled_token forced = sample(logits.data(), 5, p, {}, 0);
  BOOST_TEST(forced.token == 4);
  BOOST_TEST(forced.logprob == std::log(0.05f), boost::test_tools::tolerance(1e-5f));
  // A repetition penalty of 1.5 on token 1 after a bias of 0.85: (log(0.3) + 0.85) * 1.5 =
  // -0.53 beats log(0.4) = -0.92, so token 1; the other order (log(0.3) * 1.5 + 0.85 =
  // -0.96) would give token 0.
  p = {};
  p.temperature = 0;
  p.logit_bias = {{1, 0.85f}};
  token_history h;
  h.add(1, false);
  p.repetition_penalty = 1.5f;
  BOOST_TEST(sample(logits.data(), 5, p, h, 0).token == 1);
  p.logit_bias = {};
  BOOST_TEST(sample(logits.data(), 5, p, h, 0).token == 0);
  // Drawn: doubling token 4's odds (bias log 2) moves it from 0.05 to 0.1 / 1.05.
  p = {};
  p.seed = 5;
  p.logit_bias = {{4, std::log(2.0f)}};
  auto seen = draw(p, 20000);
  BOOST_TEST(std::abs(seen[4] / 20000.0 - 0.1 / 1.05) < 0.01);
  BOOST_TEST(std::abs(seen[0] / 20000.0 - 0.4 / 1.05) < 0.015);
}

BOOST_AUTO_TEST_CASE(the_draw_walks_the_kept_tokens_in_id_order) {
  sampling_params p;
  // Cumulative in id order 0.1, 0.5, 0.55, 0.85, 1 (in rank order, 0.52 would be token 3).
  BOOST_TEST(token_at(shuffled, p, 0.0) == 0);
  BOOST_TEST(token_at(shuffled, p, 0.09) == 0);
  BOOST_TEST(token_at(shuffled, p, 0.52) == 2);
  BOOST_TEST(token_at(shuffled, p, 0.6) == 3);
  BOOST_TEST(token_at(shuffled, p, 0.99) == 4);
  p.top_k = 2;                                  // keeps 1 and 3, mass 0.7: cumulative 0.4, 0.7
  BOOST_TEST(token_at(shuffled, p, 0.5) == 1);  // target 0.35
  BOOST_TEST(token_at(shuffled, p, 0.6) == 3);  // target 0.42
  p = {};
  p.top_p = 0.8f;                                // ranks 1, 3, 4 reach 0.85: cumulative 0.4, 0.7, 0.85
  BOOST_TEST(token_at(shuffled, p, 0.45) == 1);  // target 0.3825
  BOOST_TEST(token_at(shuffled, p, 0.85) == 4);  // target 0.7225
  p = {};
  p.min_p = 0.3f;                               // probabilities >= 0.12: the same three
  BOOST_TEST(token_at(shuffled, p, 0.8) == 3);  // target 0.68
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

namespace {

std::vector<uint64_t> mask_of(std::initializer_list<int> tokens) {
  std::vector<uint64_t> mask;
  for (int t : tokens) {
    mask.resize(std::max(mask.size(), size_t(t / 64 + 1)), 0);
    mask[size_t(t / 64)] |= uint64_t(1) << (t % 64);
  }
  return mask;
}

std::map<int, int> draw_masked(const sampling_params& p, const std::vector<uint64_t>& mask, int count) {
  std::map<int, int> seen;
  for (int pos = 0; pos < count; ++pos) ++seen[sample(logits.data(), 5, p, {}, pos, &mask).token];
  return seen;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_mask_leaves_greedy_the_best_allowed_token_with_its_raw_logprob) {
  sampling_params p;
  p.temperature = 0;
  p.top_logprobs = 1;
  const auto mask = mask_of({1, 3});
  sampled_token t = sample(logits.data(), 5, p, {}, 0, &mask);
  BOOST_TEST(t.token == 1);
  BOOST_TEST(t.logprob == std::log(0.3f), boost::test_tools::tolerance(1e-5f));
  BOOST_REQUIRE(t.top.size() == 1u);
  BOOST_TEST(t.top[0].token == 0);  // the runners-up are the model's, masked or not
}

BOOST_AUTO_TEST_CASE(a_mask_renormalises_the_draw_over_the_allowed_tokens) {
  sampling_params p;
  p.seed = 3;
  auto seen = draw_masked(p, mask_of({1, 3, 4}), 20000);
  BOOST_TEST(seen.size() == 3u);
  const std::map<int, double> expected = {{1, 0.3 / 0.45}, {3, 0.1 / 0.45}, {4, 0.05 / 0.45}};
  for (auto [t, q] : expected) BOOST_TEST(std::abs(seen[t] / 20000.0 - q) < 0.015);
}

BOOST_AUTO_TEST_CASE(cuts_rank_only_the_allowed_tokens) {
  sampling_params p;
  p.top_k = 1;  // the best allowed token, though 0 and 1 rank above it overall
  auto seen = draw_masked(p, mask_of({2, 4}), 500);
  BOOST_TEST((seen == std::map<int, int>{{2, 500}}));

  p = {};
  p.top_p = 0.6f;  // over {1, 2, 3}: 0.545, then 0.818 reaches 0.6 at token 2
  seen = draw_masked(p, mask_of({1, 2, 3}), 4000);
  BOOST_TEST(seen.size() == 2u);
  BOOST_TEST(!seen.count(3));

  p = {};
  p.min_p = 0.5f;  // 0.5 times the best allowed (0.15): token 3's 0.1 stays, 4's 0.05 goes
  seen = draw_masked(p, mask_of({2, 3, 4}), 4000);
  BOOST_TEST(seen.size() == 2u);
  BOOST_TEST(!seen.count(4));
}

BOOST_AUTO_TEST_CASE(the_masked_draw_walks_the_allowed_tokens_in_id_order) {
  sampling_params p;
  const auto mask = mask_of({1, 3});                                                  // mass 0.7: cumulative 0.4, 0.7
  BOOST_TEST(sample_with_uniform(shuffled.data(), 5, p, {}, 0.5, &mask).token == 1);  // target 0.35
  BOOST_TEST(sample_with_uniform(shuffled.data(), 5, p, {}, 0.6, &mask).token == 3);  // target 0.42
  BOOST_TEST(sample_with_uniform(shuffled.data(), 5, p, {}, 0.9999, &mask).token == 3);
}

BOOST_AUTO_TEST_CASE(penalties_apply_among_the_allowed_tokens) {
  sampling_params p;
  p.temperature = 0;
  p.frequency_penalty = 0.5f;
  token_history h;
  h.add(0, true);
  const auto mask = mask_of({0, 3});  // log 0.4 - 0.5 = -1.42 stays above log 0.1 = -2.30
  BOOST_TEST(sample(logits.data(), 5, p, h, 0, &mask).token == 0);
  p.frequency_penalty = 1.5f;  // -2.42: now below token 3
  BOOST_TEST(sample(logits.data(), 5, p, h, 0, &mask).token == 3);
}

BOOST_AUTO_TEST_CASE(words_past_the_end_of_a_mask_allow_nothing) {
  std::vector<float> l(130, 0.0f);
  l[129] = 5.0f;  // the model's favourite lies past the mask's one word
  l[70] = 4.0f;
  sampling_params p;
  p.temperature = 0;
  const auto mask = mask_of({5});
  BOOST_TEST(sample(l.data(), 130, p, {}, 0, &mask).token == 5);
  p.temperature = 1;
  for (int pos = 0; pos < 50; ++pos) BOOST_TEST(sample(l.data(), 130, p, {}, pos, &mask).token == 5);
}

// The rule under a mask is the rule over the allowed tokens alone: on random logits and
// masks, for every filter, the masked draw is the draw from the allowed logits, mapped
// back to their ids.
BOOST_AUTO_TEST_CASE(a_masked_draw_is_the_draw_over_the_allowed_tokens_alone) {
  std::mt19937 gen(9);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (int trial = 0; trial < 40; ++trial) {
    const int vocab = 200 + trial * 7;
    std::vector<float> l(static_cast<size_t>(vocab));
    for (float& x : l) x = normal(gen);
    std::vector<uint64_t> mask(size_t(vocab + 63) / 64, 0);
    std::vector<int> ids;
    std::vector<float> allowed_logits;
    for (int t = 0; t < vocab; ++t)
      if (gen() % 4 == 0 || t == trial) {
        mask[size_t(t / 64)] |= uint64_t(1) << (t % 64);
        ids.push_back(t);
        allowed_logits.push_back(l[size_t(t)]);
      }
    sampling_params p;
    p.temperature = trial % 5 == 0 ? 0.0f : 0.5f + 0.1f * float(trial % 7);
    p.top_k = trial % 3 == 0 ? 1 + trial % 17 : 0;
    p.top_p = trial % 4 == 1 ? 0.7f : 1.0f;
    p.min_p = trial % 6 == 2 ? 0.05f : 0.0f;
    for (double u = 0.0; u < 1.0; u += 0.037) {
      const int masked = sample_with_uniform(l.data(), vocab, p, {}, u, &mask).token;
      const int alone = sample_with_uniform(allowed_logits.data(), int(ids.size()), p, {}, u).token;
      BOOST_TEST(masked == ids[size_t(alone)], "trial " << trial << ", u " << u);
    }
  }
}
