// The one-node engine as actors: continuous batching, preemption, prefix caching and
// recovery from crashed stages and expert groups, checked token by token against the
// model run alone.
#define BOOST_TEST_MODULE local_engine
#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include "gateway/json_schema/json_schema_grammar.hpp"
#include "tests/actors/engine_harness.hpp"
#include "tests/actors/status_object.hpp"

using namespace troupe;

BOOST_AUTO_TEST_CASE(concurrent_greedy_requests_match_runs_alone) {
  caf::actor_system system{test::engine_config()};
  auto e = start_local_engine(system, test::fixture_options());
  BOOST_REQUIRE(e);
  caf::scoped_actor self{system};
  auto requests = test::greedy_requests(16, 1, 12, e->config.vocab_size);
  auto got = test::run_requests(self, *e, requests);
  test::expect_same_as_alone(requests, got);
  e->stop(system);
}

BOOST_AUTO_TEST_CASE(a_small_kv_cache_preempts_and_still_gives_the_same_tokens) {
  caf::actor_system system{test::engine_config()};
  auto options = test::fixture_options();
  // Two layers' worth of blocks for about 90 tokens: 12 sequences of up to 60 cannot all fit.
  options.backend.kv_cache_bytes = size_t(4) * 2 * 2 * 32 * 4 * 2 * 3 * 12;
  options.max_model_len = 80;
  auto e = start_local_engine(system, options);
  BOOST_REQUIRE(e);
  caf::scoped_actor self{system};
  auto requests = test::greedy_requests(12, 2, 20, e->config.vocab_size);
  auto got = test::run_requests(self, *e, requests);
  test::expect_same_as_alone(requests, got);
  const engine_stats stats = test::stats_of(self, *e);
  BOOST_TEST(stats.preemptions > 0u);
  BOOST_TEST(stats.kv.used_blocks == 0);
  e->stop(system);
}

BOOST_AUTO_TEST_CASE(a_repeated_prompt_prefix_is_served_from_the_cache) {
  caf::actor_system system{test::engine_config()};
  auto e = start_local_engine(system, test::fixture_options());
  BOOST_REQUIRE(e);
  caf::scoped_actor self{system};
  auto requests = test::greedy_requests(1, 3, 6, e->config.vocab_size);
  requests[0].prompt.resize(30, 7);
  auto first = test::run_requests(self, *e, requests);
  requests[0].id = 2;
  auto second = test::run_requests(self, *e, requests);
  BOOST_TEST(first.at(1).cached_prompt_tokens == 0);
  BOOST_TEST(second.at(2).cached_prompt_tokens == 28);  // 7 full blocks of 4; the last token is recomputed
  BOOST_TEST(second.at(2).tokens == first.at(1).tokens);
  e->stop(system);
}

// Kills a stage or an expert group several times while 16 streams run: every request
// still ends once, with exactly the tokens of a fault-free run.
BOOST_AUTO_TEST_CASE(crashed_stages_and_expert_groups_are_restarted_without_gaps_or_duplicates) {
  for (std::string victim : {"stage_0", "expert_group_1"}) {
    caf::actor_system system{test::engine_config()};
    auto e = start_local_engine(system, test::fixture_options());
    BOOST_REQUIRE(e);
    caf::scoped_actor self{system};
    test::expect_crash_drill_replays(self, *e, victim);
    e->stop(system);
  }
}

BOOST_AUTO_TEST_CASE(too_long_prompts_and_cancellations_end_exactly_once) {
  caf::actor_system system{test::engine_config()};
  auto options = test::fixture_options();
  options.vocabulary = test::json_vocabulary(384, 382);
  auto e = start_local_engine(system, options);
  BOOST_REQUIRE(e);
  caf::scoped_actor self{system};
  generation_request too_long;
  too_long.id = 1;
  too_long.prompt.assign(size_t(e->max_model_len), 5);
  auto got = test::run_requests(self, *e, {too_long});
  BOOST_TEST(int(got.at(1).finish) == int(finish_reason::error));
  BOOST_TEST(got.at(1).error.find("this model takes 1 to") != std::string::npos);

  generation_request r = too_long;
  r.id = 2;
  r.prompt.assign(10, 3);
  r.max_tokens = 1000;
  self->send(e->scheduler, submit_atom::value, r, caf::actor(self));
  self->send(e->scheduler, cancel_atom::value, request_id(2));
  // Also one cancelled while the last stage readies its grammar, before it waits.
  generation_request constrained = r;
  constrained.id = 4;
  constrained.output_grammar = json_schema_grammar(test::status_schema()).value();
  constrained.stop_token_ids = {e->config.eos_token_ids.at(0)};
  self->send(e->scheduler, submit_atom::value, constrained, caf::actor(self));
  self->send(e->scheduler, cancel_atom::value, request_id(4));
  // Cancelled requests send nothing more once the cancel is processed; the engine goes on.
  generation_request after = r;
  after.id = 3;
  after.max_tokens = 3;
  auto later = test::run_requests(self, *e, {after});
  BOOST_TEST(later.at(3).tokens.size() == 3u);
  BOOST_TEST(later.count(2) == 0u);
  BOOST_TEST(later.count(4) == 0u);
  BOOST_TEST(test::stats_of(self, *e).waiting == 0);
  e->stop(system);
}

// Constrained streams beside free ones, then the same with the sampling stage killed under
// them (the only stage, or the last of a pipeline of two): each restarted stage rebuilds
// every grammar state from the re-prefilled tokens, so the outputs are those of the
// fault-free run, valid, and the free ones still greedy.
BOOST_AUTO_TEST_CASE(constrained_streams_survive_stage_crashes_with_the_same_valid_output) {
  for (auto [stages, victim] : {std::pair{1, "stage_0"}, std::pair{2, "stage_1"}}) {
    BOOST_TEST_CONTEXT(stages << " stages, " << victim << " killed") {
      caf::actor_system system{test::engine_config()};
      auto options = test::fixture_options();
      options.vocabulary = test::json_vocabulary(384, 382);
      options.pipeline_stages = stages;
      auto e = start_local_engine(system, options);
      BOOST_REQUIRE(e);
      const int eos = e->config.eos_token_ids.at(0);
      caf::scoped_actor self{system};
      auto requests = test::greedy_requests(12, 5, 80, e->config.vocab_size);
      std::vector<generation_request> free;
      for (auto& r : requests) {
        if (r.id % 3 == 0) {
          r.max_tokens = 16;
          free.push_back(r);
          continue;
        }
        r.output_grammar = json_schema_grammar(test::status_schema()).value();
        r.stop_token_ids = {eos};
        r.sampling.temperature = 0.8f;
        r.sampling.seed = r.id * 31;
      }
      auto fault_free = test::run_requests(self, *e, requests);
      test::expect_same_as_alone(free, fault_free);
      for (auto& r : requests) r.id += 100;
      auto faulty = test::run_requests_killing(self, *e, requests, victim, 20, 5);
      for (const auto& r : requests) {
        BOOST_TEST_CONTEXT("request " << r.id) {
          const auto& got = faulty.at(r.id);
          BOOST_TEST(got.events_after_finish == 0);
          BOOST_TEST(got.tokens == fault_free.at(r.id - 100).tokens);
          if (r.output_grammar.rules.empty()) continue;
          BOOST_TEST(int(got.finish) == int(finish_reason::stop));
          test::expect_status_object(got.tokens, *options.vocabulary, eos);
        }
      }
      BOOST_TEST(test::stats_of(self, *e).recoveries > 0u);
      e->stop(system);
    }
  }
}
