// The one-node engine serving a Qwen3.5 checkpoint, whose linear-attention layers keep a
// recurrent state per sequence in a slot kv_manager hands out beside its KV blocks:
// continuous batching, pipeline stages, prompts cut by the token budget, preemption, a
// crashed stage, and the prefix cache turned off.
//
// A prompt computed in one piece and in several (a re-prefill, a smaller budget) rounds
// differently in the chunked delta rule, so where the engine cannot cut as a lone run does,
// tokens are held to the lone run's wherever its top-2 margin lets one call them.
#define BOOST_TEST_MODULE hybrid_engine
#include <boost/test/unit_test.hpp>

#include "kernels/cpu/log_softmax.hpp"
#include "model/kv_pool.hpp"
#include "tests/actors/engine_harness.hpp"

using namespace troupe;

namespace {

std::filesystem::path hybrid_fixture() { return test::source_dir() / "tests/golden/fixtures/qwen3_5_moe_text_tied"; }

engine_options hybrid_options() {
  engine_options o;
  o.backend.model_dir = hybrid_fixture();
  o.backend.block_size = 4;
  o.backend.kv_cache_bytes = size_t(4) << 20;
  o.expert_groups = 2;
  return o;
}

const moe_model& hybrid_alone() {
  static const auto model = load_model(hybrid_fixture()).value();
  return *model;
}

constexpr float margin_to_call = 1e-3f;  // log-prob gap below which either token may win

// A lone greedy run: its tokens, and at each the log-prob gap to the runner-up.
struct lone_run {
  std::vector<int> tokens;
  std::vector<float> margins;
};

lone_run greedy_with_margins(const std::vector<int>& prompt, int max_tokens) {
  const moe_model& model = hybrid_alone();
  const int vocab = model.config().vocab_size;
  single_sequence s(model, int(prompt.size()) + max_tokens + 1);
  lone_run run;
  auto logits = s.forward(prompt);
  std::vector<float> lp(static_cast<size_t>(vocab));
  while (int(run.tokens.size()) < max_tokens) {
    cpu::log_softmax(logits.data(), vocab, lp.data());
    std::vector<float> sorted = lp;
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
    run.tokens.push_back(int(std::max_element(lp.begin(), lp.end()) - lp.begin()));
    run.margins.push_back(sorted[0] - sorted[1]);
    logits = s.forward(std::vector<int>{run.tokens.back()});
  }
  return run;
}

// Every request ended once, by length; its tokens are the lone run's, all of them when
// `exact`, else up to the first step whose margin is too small to call. Returns how many
// tokens were held to the lone run.
size_t expect_lone_tokens(const std::vector<generation_request>& requests,
                          const std::map<request_id, test::outcome>& got, bool exact) {
  size_t compared = 0;
  for (const auto& r : requests) {
    const auto& o = got.at(r.id);
    const lone_run lone = greedy_with_margins(r.prompt, r.max_tokens);
    BOOST_TEST_CONTEXT("request " << r.id) {
      BOOST_TEST(o.events_after_finish == 0);
      BOOST_TEST(int(o.finish) == int(finish_reason::length));
      BOOST_REQUIRE(o.tokens.size() == lone.tokens.size());
      for (size_t i = 0; i < o.tokens.size(); ++i) {
        if (!exact && lone.margins[i] < margin_to_call) break;  // either token may win; the runs part here
        BOOST_TEST_CONTEXT("token " << i) BOOST_TEST(o.tokens[i] == lone.tokens[i]);
        ++compared;
      }
    }
  }
  return compared;
}

size_t total_tokens(const std::vector<generation_request>& requests) {
  size_t n = 0;
  for (const auto& r : requests) n += size_t(r.max_tokens);
  return n;
}

}  // namespace

// Prompts go whole into the first step, as in a lone run, so every token is the lone run's.
BOOST_AUTO_TEST_CASE(concurrent_requests_match_runs_alone_in_one_stage_and_in_two) {
  for (int stages : {1, 2}) {
    BOOST_TEST_CONTEXT(stages << " stage(s)") {
      caf::actor_system system{test::engine_config()};
      auto options = hybrid_options();
      options.pipeline_stages = stages;
      auto e = start_local_engine(system, options);
      BOOST_REQUIRE_MESSAGE(e, (e ? "" : e.err().message));
      caf::scoped_actor self{system};
      auto requests = test::greedy_requests(16, 11, 12, e->config.vocab_size);
      auto got = test::run_requests(self, *e, requests);
      expect_lone_tokens(requests, got, /*exact=*/true);
      BOOST_TEST(test::stats_of(self, *e).kv.used_blocks == 0);
      e->stop(system);
    }
  }
}

// A budget of 8 tokens a step cuts prompts into pieces beside other sequences' decode
// tokens, and a cache of 24 blocks preempts sequences that then re-prefill from scratch.
BOOST_AUTO_TEST_CASE(cut_and_preempted_sequences_still_give_the_lone_tokens) {
  caf::actor_system system{test::engine_config()};
  auto options = hybrid_options();
  options.scheduler.max_num_batched_tokens = 8;
  options.scheduler.max_num_seqs = 8;
  options.max_model_len = 80;
  const auto config = load_model_config(hybrid_fixture()).value();
  options.backend.kv_cache_bytes =
      size_t(8 * state_slot_bytes(config)) + size_t(24 * kv_block_bytes(config, options.backend.block_size));
  auto e = start_local_engine(system, options);
  BOOST_REQUIRE_MESSAGE(e, (e ? "" : e.err().message));
  BOOST_TEST(e->num_blocks == 24);
  caf::scoped_actor self{system};
  auto requests = test::greedy_requests(10, 12, 16, e->config.vocab_size);
  auto got = test::run_requests(self, *e, requests);
  const size_t compared = expect_lone_tokens(requests, got, /*exact=*/false);
  BOOST_TEST(compared >= total_tokens(requests) * 3 / 4, compared << " of " << total_tokens(requests) << " compared");
  const engine_stats stats = test::stats_of(self, *e);
  BOOST_TEST(stats.preemptions > 0u);
  BOOST_TEST(stats.kv.used_blocks == 0);
  e->stop(system);
}

// The linear layers' state after a prefix is kept nowhere, so nothing is served from the
// prefix cache: the same prompt twice is computed twice, to the same tokens.
BOOST_AUTO_TEST_CASE(a_repeated_prompt_is_computed_again) {
  caf::actor_system system{test::engine_config()};
  auto e = start_local_engine(system, hybrid_options());
  BOOST_REQUIRE_MESSAGE(e, (e ? "" : e.err().message));
  caf::scoped_actor self{system};
  auto requests = test::greedy_requests(1, 13, 6, e->config.vocab_size);
  requests[0].prompt.resize(30, 7);
  auto first = test::run_requests(self, *e, requests);
  requests[0].id = 2;
  auto second = test::run_requests(self, *e, requests);
  BOOST_TEST(first.at(1).cached_prompt_tokens == 0);
  BOOST_TEST(second.at(2).cached_prompt_tokens == 0);
  BOOST_TEST(second.at(2).tokens == first.at(1).tokens);
  BOOST_TEST(test::stats_of(self, *e).kv.prefix_hits == 0u);
  e->stop(system);
}

// Killing the stage loses every recurrent state with its KV pool; the scheduler re-prefills
// each sequence into a fresh slot, and the streams go on without gaps or duplicates.
BOOST_AUTO_TEST_CASE(a_crashed_stage_is_recovered_by_re_prefilling_every_state) {
  caf::actor_system system{test::engine_config()};
  auto e = start_local_engine(system, hybrid_options());
  BOOST_REQUIRE_MESSAGE(e, (e ? "" : e.err().message));
  caf::scoped_actor self{system};
  auto requests = test::greedy_requests(12, 14, 20, e->config.vocab_size);
  auto got = test::run_requests_killing(self, *e, requests, "stage_0", 30, 4);
  const size_t compared = expect_lone_tokens(requests, got, /*exact=*/false);
  BOOST_TEST(compared >= total_tokens(requests) * 3 / 4, compared << " of " << total_tokens(requests) << " compared");
  BOOST_TEST(test::stats_of(self, *e).recoveries > 0u);
  e->stop(system);
}
