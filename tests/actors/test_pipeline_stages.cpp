// Pipeline parallelism inside one engine: stages of contiguous layer ranges, each with its
// own KV pool, chained by plans (messages) and residual rows (transport/). Checked against the one-stage engine
// token for token (and log-prob for log-prob: the CPU forward is deterministic), under
// stage crashes, and for the layouts it refuses.
#define BOOST_TEST_MODULE pipeline_stages
#include <boost/test/unit_test.hpp>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "tests/actors/engine_harness.hpp"
#include "tests/support/eventually.hpp"

using namespace troupe;

namespace {

// Greedy requests and, beside them, seeded sampled ones with penalties (whose token
// histories live at the last stage), every token with its log-prob.
std::vector<generation_request> mixed_requests(int vocab) {
  auto requests = test::greedy_requests(16, 11, 16, vocab);
  for (auto& r : requests) {
    r.sampling.top_logprobs = 2;
    if (r.id % 2) continue;
    r.sampling.temperature = 0.8f;
    r.sampling.top_p = 0.9f;
    r.sampling.presence_penalty = 0.5f;
    r.sampling.seed = r.id * 13;
  }
  return requests;
}

std::map<request_id, test::outcome> run_with(const engine_options& options,
                                             const std::vector<generation_request>& requests) {
  caf::actor_system system{test::engine_config()};
  auto e = start_local_engine(system, options);
  BOOST_REQUIRE_MESSAGE(e, (e ? std::string() : e.err().message));
  caf::scoped_actor self{system};
  auto got = test::run_requests(self, *e, requests);
  e->stop(system);
  return got;
}

std::vector<component_health> health_of(caf::scoped_actor& self, const engine& e) {
  std::vector<component_health> out;
  self->request(e.health, caf::infinite, health_atom::value)
      .receive([&](std::vector<component_health> v) { out = v; }, [](caf::error&) { BOOST_FAIL("no health answer"); });
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(layer_ranges_are_split_evenly_or_checked) {
  auto even = pipeline_layout(3, {}, 8).value();
  BOOST_REQUIRE(even.size() == 3u);
  BOOST_TEST((even[0].first == 0 && even[0].last == 3 && even[1].first == 3 && even[1].last == 6 &&
              even[2].first == 6 && even[2].last == 8));
  auto given = pipeline_layout(1, {{0, 1}, {1, 8}}, 8).value();  // given ranges win over the count
  BOOST_TEST((given.size() == 2u && given[1].first == 1 && given[1].last == 8));
  const std::vector<std::pair<std::vector<layer_range>, std::string>> refused = {
      {{{1, 8}}, "pipeline stage 0 (layers [1, 8)) must start at layer 0"},
      {{{0, 3}, {4, 8}}, "pipeline stage 1 (layers [4, 8)) must start at layer 3, where the stage before it ends"},
      {{{0, 5}, {3, 8}}, "pipeline stage 1 (layers [3, 8)) must start at layer 5"},
      {{{0, 0}, {0, 8}}, "pipeline stage 0 (layers [0, 0)) holds no layer"},
      {{{0, 3}, {3, 6}}, "the pipeline stages cover layers [0, 6); this model has 8"},
  };
  for (const auto& [ranges, message] : refused) {
    auto r = pipeline_layout(1, ranges, 8);
    BOOST_REQUIRE(!r);
    BOOST_TEST(r.err().message.find(message) != std::string::npos, r.err().message);
  }
  for (int stages : {0, -2}) {
    auto r = pipeline_layout(stages, {}, 8);
    BOOST_REQUIRE(!r);
    BOOST_TEST(r.err().message == std::to_string(stages) + " pipeline stages: there must be at least one");
  }
  auto r = pipeline_layout(9, {}, 8);
  BOOST_REQUIRE(!r);
  BOOST_TEST(r.err().message == "9 pipeline stages: this model has 8 layers and each stage needs at least one");
}

BOOST_AUTO_TEST_CASE(an_engine_with_an_invalid_split_does_not_start) {
  caf::actor_system system{test::engine_config()};
  auto options = test::fixture_options();
  options.pipeline_stages = 4;  // the fixture has 3 layers
  auto e = start_local_engine(system, options);
  BOOST_REQUIRE(!e);
  BOOST_TEST(e.err().message == "4 pipeline stages: this model has 3 layers and each stage needs at least one");
  options.pipeline_layers = {{0, 2}, {1, 3}};
  e = start_local_engine(system, options);
  BOOST_REQUIRE(!e);
  BOOST_TEST(e.err().message ==
             "pipeline stage 1 (layers [1, 3)) must start at layer 2, where the stage before it ends");
}

// The plan that crosses from one stage to the next survives CAF's serialization, as it must
// for stages in other processes (the rows go over transport/).
BOOST_AUTO_TEST_CASE(a_handed_on_step_serializes_for_remote_stages) {
  caf::actor_system system{test::engine_config()};
  step_plan plan;
  plan.step = 7;
  plan.token_ids = {5, 6, 7};
  step_sequence s;
  s.id = 3;
  s.count = 3;
  s.block_table = {0, 4};
  s.sample = true;
  s.restart = true;
  s.sampling.seed = 99;
  plan.sequences.push_back(s);
  std::vector<char> bytes;
  caf::binary_serializer sink{system, bytes};
  auto sent = caf::make_message(step_atom::value, plan, handed_on_atom::value);
  BOOST_REQUIRE(!sink(sent));
  caf::binary_deserializer source{system, bytes};
  caf::message received;
  BOOST_REQUIRE(!source(received));
  BOOST_REQUIRE((received.match_elements<step_atom, step_plan, handed_on_atom>()));
  const auto& p = received.get_as<step_plan>(1);
  BOOST_TEST(p.step == 7u);
  BOOST_TEST(p.token_ids == plan.token_ids);
  BOOST_TEST(p.sequences.at(0).block_table == s.block_table);
  BOOST_TEST(p.sequences.at(0).sampling.seed == 99u);
}

// Two and three stages (even, and uneven) give the one-stage engine's tokens and log-probs
// for concurrent greedy and seeded sampled requests; the greedy ones are also the model's
// run alone. Each stage reports ready under its name.
BOOST_AUTO_TEST_CASE(pipelines_give_the_one_stage_tokens_and_log_probs) {
  const auto requests = mixed_requests(test::model_alone().config().vocab_size);
  const auto one_stage = run_with(test::fixture_options(), requests);
  std::vector<generation_request> greedy;
  for (const auto& r : requests)
    if (r.sampling.temperature == 0.0f) greedy.push_back(r);
  test::expect_same_as_alone(greedy, one_stage);
  const std::vector<std::pair<int, std::vector<layer_range>>> layouts = {
      {2, {}}, {3, {}}, {1, {{0, 1}, {1, 3}}}, {1, {{0, 2}, {2, 3}}}};
  for (const auto& [stages, layers] : layouts) {
    BOOST_TEST_CONTEXT(stages << " even stages, or " << layers.size() << " given") {
      auto options = test::fixture_options();
      options.pipeline_stages = stages;
      options.pipeline_layers = layers;
      const auto got = run_with(options, requests);
      for (const auto& r : requests) {
        BOOST_TEST_CONTEXT("request " << r.id) {
          BOOST_TEST(got.at(r.id).events_after_finish == 0);
          BOOST_TEST(int(got.at(r.id).finish) == int(one_stage.at(r.id).finish));
          BOOST_TEST(got.at(r.id).tokens == one_stage.at(r.id).tokens);
          BOOST_TEST(got.at(r.id).logprobs == one_stage.at(r.id).logprobs);
        }
      }
    }
  }
  caf::actor_system system{test::engine_config()};
  auto options = test::fixture_options();
  options.pipeline_stages = 3;
  auto e = start_local_engine(system, options);
  BOOST_REQUIRE(e);
  caf::scoped_actor self{system};
  auto stage_ready = [&](const std::string& name) {
    for (const auto& c : health_of(self, *e))
      if (c.name == name) return c.ready;
    return false;
  };
  BOOST_TEST(
      test::eventually([&] { return stage_ready("stage_0") && stage_ready("stage_1") && stage_ready("stage_2"); }));
  e->stop(system);
}

// A pipeline runs micro-batches: with 16 streams, steps over half of them each begin
// while the other half's step is in the pipeline (the test above holds their tokens and
// log-probs to one stage's). One stage, or micro_batches = 1, runs one step at a time.
BOOST_AUTO_TEST_CASE(a_pipeline_overlaps_steps_of_its_sequences_unless_told_not_to) {
  for (auto [stages, micro_batches] : {std::pair{1, 0}, std::pair{2, 0}, std::pair{2, 1}}) {
    BOOST_TEST_CONTEXT(stages << " stages, micro_batches " << micro_batches) {
      caf::actor_system system{test::engine_config()};
      auto options = test::fixture_options();
      options.pipeline_stages = stages;
      options.scheduler.micro_batches = micro_batches;
      auto e = start_local_engine(system, options);
      BOOST_REQUIRE(e);
      caf::scoped_actor self{system};
      const auto requests = test::greedy_requests(16, 5, 12, e->config.vocab_size);
      test::expect_same_as_alone(requests, test::run_requests(self, *e, requests));
      const engine_stats stats = test::stats_of(self, *e);
      if (stages == 1 || micro_batches == 1)
        BOOST_TEST(stats.overlapped_steps == 0u);
      else
        BOOST_TEST(stats.overlapped_steps * 2 > stats.steps, stats.overlapped_steps << " of " << stats.steps);
      e->stop(system);
    }
  }
}

// Kills one stage of a pipeline several times while 16 streams run (the middle or last
// stage_1, or stage_0): every stage's KV for the running sequences is rebuilt by
// re-prefill, so every request still ends once with the tokens of a fault-free run.
BOOST_AUTO_TEST_CASE(crashed_pipeline_stages_are_restarted_without_gaps_or_duplicates) {
  for (auto [stages, victim] : {std::pair{3, "stage_1"}, std::pair{2, "stage_1"}, std::pair{3, "stage_0"}}) {
    BOOST_TEST_CONTEXT(stages << " stages, " << victim << " killed") {
      caf::actor_system system{test::engine_config()};
      auto options = test::fixture_options();
      options.pipeline_stages = stages;
      auto e = start_local_engine(system, options);
      BOOST_REQUIRE(e);
      caf::scoped_actor self{system};
      test::expect_crash_drill_replays(self, *e, victim);
      e->stop(system);
    }
  }
}

// A stage that restarts while the engine is idle takes its KV memory with it: the prefix
// cache must forget the blocks it described, or the next request would read what the new
// stage never wrote.
BOOST_AUTO_TEST_CASE(a_stage_restarted_while_idle_empties_the_prefix_cache) {
  caf::actor_system system{test::engine_config()};
  auto options = test::fixture_options();
  options.pipeline_stages = 2;
  auto e = start_local_engine(system, options);
  BOOST_REQUIRE(e);
  caf::scoped_actor self{system};
  auto requests = test::greedy_requests(1, 3, 6, e->config.vocab_size);
  requests[0].prompt.resize(30, 7);
  const auto first = test::run_requests(self, *e, requests);
  self->send(e->supervisor, crash_atom::value, std::string("stage_1"));
  BOOST_TEST(test::eventually([&] {
    for (const auto& c : health_of(self, *e))
      if (c.name == "stage_1") return c.restarts == 1u && c.ready;
    return false;
  }));
  requests[0].id = 2;
  const auto second = test::run_requests(self, *e, requests);
  BOOST_TEST(second.at(2).cached_prompt_tokens == 0);
  BOOST_TEST(second.at(2).tokens == first.at(1).tokens);
  BOOST_TEST(second.at(2).tokens == test::greedy_alone(test::model_alone(), requests[0].prompt, 6));
  e->stop(system);
}

// The recovery budget bounds re-prefills in a row without a token between them (a request
// that fails every step it is in): requests that get on between crashes outlive more of
// them than the budget, and end with the fault-free tokens.
BOOST_AUTO_TEST_CASE(requests_that_get_on_between_crashes_outlive_the_recovery_budget) {
  caf::actor_system system{test::engine_config()};
  auto options = test::fixture_options();
  options.pipeline_stages = 2;
  options.scheduler.max_recoveries = 2;
  auto e = start_local_engine(system, options);
  BOOST_REQUIRE(e);
  caf::scoped_actor self{system};
  auto requests = test::greedy_requests(16, 4, 24, e->config.vocab_size);
  const auto fault_free = test::run_requests(self, *e, requests);
  for (auto& r : requests) r.id += 100;
  const auto faulty = test::run_requests_killing(self, *e, requests, "stage_1", 30, 6);
  for (const auto& r : requests) {
    BOOST_TEST_CONTEXT("request " << r.id) {
      BOOST_TEST(faulty.at(r.id).error == "");
      BOOST_TEST(int(faulty.at(r.id).finish) == int(finish_reason::length));
      BOOST_TEST(faulty.at(r.id).tokens == fault_free.at(r.id - 100).tokens);
    }
  }
  e->stop(system);
}
