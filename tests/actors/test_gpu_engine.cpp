// The one-node engine as actors on the CUDA backend: the scheduler, kv_manager and stage
// drive the GPU step unchanged (for Qwen3.5 too, its recurrent states in kv_manager's
// slots), and a crashed stage or expert group comes back on the memory its predecessor had. Checked against
// transformers' greedy tokens on a golden fixture drawn so that its first 12 tokens route without near-ties, and
// constrained requests give valid outputs through the GPU sampler's masks, crashes or not.
#define BOOST_TEST_MODULE gpu_engine
#include <boost/test/unit_test.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "gateway/json_schema/json_schema_grammar.hpp"
#include "tests/actors/engine_harness.hpp"
#include "tests/actors/status_object.hpp"

using namespace troupe;

namespace {

const std::filesystem::path fixture = test::source_dir() / "tests/golden/fixtures/gpu_hd64_gqa";
// A qwen3_5_moe fixture (Gated DeltaNet and gated full-attention layers), likewise drawn.
const std::filesystem::path hybrid_fixture = test::source_dir() / "tests/golden/fixtures/gpu_qwen3_5_hd64_sharded";

engine_options gpu_options(const std::filesystem::path& dir = fixture) {
  engine_options o;
  o.backend.model_dir = dir;
  o.backend.kv_cache_bytes = size_t(64) << 20;
  o.device = device_kind::cuda;
  o.scheduler.max_num_seqs = 16;
  o.scheduler.max_num_batched_tokens = 256;
  return o;
}

nlohmann::json golden(const std::filesystem::path& dir = fixture) {
  std::ifstream in(dir / "golden.json");
  return nlohmann::json::parse(in);
}

// `count` copies of the golden prompt, greedy, 12 tokens each.
std::vector<generation_request> golden_requests(int count, request_id first_id,
                                                const std::filesystem::path& dir = fixture) {
  std::vector<generation_request> out;
  for (int i = 0; i < count; ++i) {
    generation_request r;
    r.id = first_id + request_id(i);
    r.prompt = golden(dir)["prompt"].get<std::vector<int>>();
    r.max_tokens = 12;
    r.sampling.temperature = 0.0f;
    out.push_back(r);
  }
  return out;
}

std::vector<int> golden_tokens(const std::filesystem::path& dir = fixture) {
  auto all = golden(dir)["greedy"].get<std::vector<int>>();
  all.resize(12);
  return all;
}

}  // namespace

BOOST_AUTO_TEST_CASE(concurrent_requests_give_transformers_greedy_tokens) {
  caf::actor_system system{test::engine_config()};
  auto e = start_local_engine(system, gpu_options());
  BOOST_REQUIRE_MESSAGE(e, (e ? std::string() : e.err().message));
  caf::scoped_actor self{system};
  const auto requests = golden_requests(6, 1);
  auto got = test::run_requests(self, *e, requests);
  for (const auto& r : requests) {
    BOOST_TEST_CONTEXT("request " << r.id) {
      BOOST_TEST(int(got.at(r.id).finish) == int(finish_reason::length));
      BOOST_TEST(got.at(r.id).tokens == golden_tokens());
    }
  }
  e->stop(system);
}

BOOST_AUTO_TEST_CASE(crashed_stage_and_expert_group_come_back_with_the_same_tokens) {
  for (std::string victim : {"stage_0", "expert_group_0"}) {
    caf::actor_system system{test::engine_config()};
    auto e = start_local_engine(system, gpu_options());
    BOOST_REQUIRE(e);
    caf::scoped_actor self{system};
    const auto requests = golden_requests(8, 1);
    auto got = test::run_requests_killing(self, *e, requests, victim, 20, 3);
    BOOST_TEST_CONTEXT(victim) {
      for (const auto& r : requests) {
        BOOST_TEST(got.at(r.id).events_after_finish == 0);
        BOOST_TEST(int(got.at(r.id).finish) == int(finish_reason::length));
        BOOST_TEST(got.at(r.id).tokens == golden_tokens());
      }
    }
    e->stop(system);
  }
}

// The fixture's two layers as two pipeline stages sharing the GPU, the rows handed on
// in-process: transformers' tokens, and again with the second stage killed under them.
BOOST_AUTO_TEST_CASE(two_pipeline_stages_on_one_gpu_give_the_same_tokens) {
  for (bool kill : {false, true}) {
    caf::actor_system system{test::engine_config()};
    auto options = gpu_options();
    options.pipeline_stages = 2;
    auto e = start_local_engine(system, options);
    BOOST_REQUIRE_MESSAGE(e, (e ? std::string() : e.err().message));
    caf::scoped_actor self{system};
    const auto requests = golden_requests(8, 1);
    auto got = kill ? test::run_requests_killing(self, *e, requests, "stage_1", 20, 3)
                    : test::run_requests(self, *e, requests);
    BOOST_TEST_CONTEXT((kill ? "stage_1 killed" : "no crash")) {
      for (const auto& r : requests) {
        BOOST_TEST(got.at(r.id).events_after_finish == 0);
        BOOST_TEST(int(got.at(r.id).finish) == int(finish_reason::length));
        BOOST_TEST(got.at(r.id).tokens == golden_tokens());
      }
    }
    e->stop(system);
  }
}

// Qwen3.5 on the GPU through the actors: each running sequence's recurrent state in the
// slot kv_manager gave it, prompts of 34 tokens prefilled in steps of at most 24 tokens
// beside the other requests' decode steps, on one stage and on two, and again with the
// stage killed under them (a re-prefill into a fresh slot).
BOOST_AUTO_TEST_CASE(a_qwen3_5_model_gives_transformers_greedy_tokens) {
  for (int stages : {1, 2})
    for (bool kill : {false, true}) {
      caf::actor_system system{test::engine_config()};
      auto options = gpu_options(hybrid_fixture);
      options.scheduler.max_num_batched_tokens = 24;
      options.pipeline_stages = stages;
      auto e = start_local_engine(system, options);
      BOOST_REQUIRE_MESSAGE(e, (e ? std::string() : e.err().message));
      caf::scoped_actor self{system};
      const auto requests = golden_requests(6, 1, hybrid_fixture);
      auto got = kill ? test::run_requests_killing(self, *e, requests, "stage_0", 20, 3)
                      : test::run_requests(self, *e, requests);
      BOOST_TEST_CONTEXT(stages << " stage(s), " << (kill ? "stage_0 killed" : "no crash")) {
        for (const auto& r : requests) {
          BOOST_TEST(got.at(r.id).events_after_finish == 0);
          BOOST_TEST(int(got.at(r.id).finish) == int(finish_reason::length));
          BOOST_TEST(got.at(r.id).tokens == golden_tokens(hybrid_fixture));
        }
      }
      e->stop(system);
    }
}

// Sampled requests under a JSON Schema beside greedy free ones, then again with the stage
// killed under them: every output ends once, the constrained ones as valid objects of the
// schema, the free ones as transformers' tokens. Unlike on the CPU, a constrained output
// may differ from the fault-free run's after a crash: the re-prefill's logits come from
// other kernels than the decode steps' (not bit-identical), so a draw near a boundary of
// the sampled distribution can go the other way.
BOOST_AUTO_TEST_CASE(constrained_requests_give_valid_outputs_and_survive_stage_crashes) {
  caf::actor_system system{test::engine_config()};
  auto options = gpu_options();
  const int eos = 511;  // the fixture's generation_config
  options.vocabulary = test::json_vocabulary(512, 510);
  auto e = start_local_engine(system, options);
  BOOST_REQUIRE(e);
  caf::scoped_actor self{system};
  auto requests = golden_requests(9, 1);
  for (auto& r : requests) {
    if (r.id % 3 == 0) continue;
    r.output_grammar = json_schema_grammar(test::status_schema()).value();
    r.stop_token_ids = {eos};
    r.max_tokens = 80;
    r.sampling.temperature = 0.8f;
    r.sampling.seed = r.id * 31;
  }
  const auto fault_free = test::run_requests(self, *e, requests);
  for (const auto& r : requests)
    if (!r.output_grammar.rules.empty())
      test::expect_status_object(fault_free.at(r.id).tokens, *options.vocabulary, eos);
  for (auto& r : requests) r.id += 100;
  const auto faulty = test::run_requests_killing(self, *e, requests, "stage_0", 20, 3);
  for (const auto& r : requests) {
    BOOST_TEST_CONTEXT("request " << r.id) {
      const auto& got = faulty.at(r.id);
      BOOST_TEST(got.events_after_finish == 0);
      if (r.output_grammar.rules.empty()) {
        BOOST_TEST(got.tokens == golden_tokens());
        continue;
      }
      BOOST_TEST(int(got.finish) == int(finish_reason::stop));
      test::expect_status_object(got.tokens, *options.vocabulary, eos);
    }
  }
  e->stop(system);
}
