#pragma once
// Drives a one-node engine from a test: submits requests, collects every token event, and
// computes what a lone greedy run gives for comparison.
#include <map>
#include <random>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "actors/local_engine.hpp"
#include "actors/message_types.hpp"
#include "model/single_sequence.hpp"
#include "tests/support/source_dir.hpp"

namespace troupe::test {

// The golden fixture the engine tests serve: 3 layers, 8 experts (in 2 groups), a tiny KV
// cache of blocks of 4 tokens.
inline std::filesystem::path fixture() { return source_dir() / "tests/golden/fixtures/gqa_sharded"; }

inline engine_options fixture_options() {
  engine_options o;
  o.backend.model_dir = fixture();
  o.backend.block_size = 4;
  o.backend.kv_cache_bytes = size_t(4) << 20;
  o.expert_groups = 2;
  return o;
}

// The reference: the same checkpoint run one sequence at a time, outside the actors.
inline const moe_model& model_alone() {
  static const auto model = load_model(fixture()).value();
  return *model;
}

inline caf::actor_system_config& engine_config() {
  static caf::actor_system_config cfg = [] {
    caf::actor_system_config c;
    add_message_types(c);
    return c;
  }();
  return cfg;
}

struct outcome {
  std::vector<int> tokens;
  std::vector<float> logprobs;  // of each token, when the request asked for log-probs
  finish_reason finish = finish_reason::none;
  int events_after_finish = 0;
  int cached_prompt_tokens = 0;
  std::string error;
};

// Submits every request with `self` as the sink and waits until all have finished.
inline std::map<request_id, outcome> run_requests(caf::scoped_actor& self, const engine& e,
                                                  const std::vector<generation_request>& requests,
                                                  const std::function<void(int tokens_seen)>& on_token = {}) {
  std::map<request_id, outcome> out;
  for (const auto& r : requests) self->send(e.scheduler, submit_atom::value, r, caf::actor(self));
  size_t finished = 0;
  int seen = 0;
  while (finished < requests.size()) {
    self->receive(
        [&](const token_event& ev) {
          outcome& o = out[ev.id];
          if (o.finish != finish_reason::none) ++o.events_after_finish;
          for (const auto& t : ev.tokens) {
            o.tokens.push_back(t.token);
            o.logprobs.push_back(t.logprob);
          }
          o.cached_prompt_tokens = ev.cached_prompt_tokens;
          if (ev.finish != uint8_t(finish_reason::none)) {
            o.finish = finish_reason(ev.finish);
            o.error = ev.error_message;
            ++finished;
          }
          seen += int(ev.tokens.size());
          if (on_token) on_token(seen);
        },
        caf::after(std::chrono::seconds(60)) >> [&] { BOOST_FAIL("no token event for 60 s: the engine hangs"); });
  }
  return out;
}

// run_requests while `victim` (a supervisor child's name) is killed each time the tokens
// seen reach a multiple of `every`, `times` times in all (checked).
inline std::map<request_id, outcome> run_requests_killing(caf::scoped_actor& self, const engine& e,
                                                          const std::vector<generation_request>& requests,
                                                          const std::string& victim, int every, int times) {
  int kills = 0;
  auto out = run_requests(self, e, requests, [&](int seen) {
    if (seen % every == 0 && kills < times) {
      self->send(e.supervisor, crash_atom::value, victim);
      ++kills;
    }
  });
  BOOST_TEST(kills == times, victim << " was killed " << kills << " times, not " << times);
  return out;
}

// The engine's figures, from its scheduler.
inline engine_stats stats_of(caf::scoped_actor& self, const engine& e) {
  engine_stats stats;
  self->request(e.scheduler, caf::infinite, stats_atom::value)
      .receive([&](engine_stats s) { stats = s; }, [](caf::error&) { BOOST_FAIL("the scheduler does not answer"); });
  return stats;
}

// `count` greedy requests with ids 1.., random prompts of 1 to 40 tokens.
inline std::vector<generation_request> greedy_requests(int count, uint32_t seed, int max_tokens, int vocab) {
  std::mt19937 gen(seed);
  std::vector<generation_request> out;
  for (int i = 0; i < count; ++i) {
    generation_request r;
    r.id = request_id(i + 1);
    r.prompt.resize(size_t(1 + gen() % 40));
    for (int& t : r.prompt) t = int(gen() % uint32_t(vocab - 2));
    r.max_tokens = max_tokens;
    r.sampling.temperature = 0.0f;
    out.push_back(r);
  }
  return out;
}

// Greedy tokens of one prompt run alone, stopping at `stops` or after `max_tokens`.
inline std::vector<int> greedy_alone(const moe_model& model, const std::vector<int>& prompt, int max_tokens,
                                     const std::vector<int>& stops = {}) {
  single_sequence s(model, int(prompt.size()) + max_tokens + 1);
  std::vector<int> out;
  auto logits = s.forward(prompt);
  while (int(out.size()) < max_tokens) {
    const int vocab = model.config().vocab_size;
    const int next = int(std::max_element(logits.begin(), logits.begin() + vocab) - logits.begin());
    out.push_back(next);
    if (std::find(stops.begin(), stops.end(), next) != stops.end()) break;
    logits = s.forward(std::vector<int>{next});
  }
  return out;
}

// 16 seeded top-p streams run fault-free, then again with `victim` killed 5 times: every
// request ends once, by length, with the fault-free tokens, and the scheduler recovered.
inline void expect_crash_drill_replays(caf::scoped_actor& self, const engine& e, const std::string& victim) {
  auto requests = greedy_requests(16, 4, 24, e.config.vocab_size);
  for (auto& r : requests) {  // seeded sampling must replay exactly too
    r.sampling.temperature = 0.8f;
    r.sampling.top_p = 0.9f;
    r.sampling.seed = r.id * 77;
  }
  const auto fault_free = run_requests(self, e, requests);
  for (auto& r : requests) r.id += 100;
  const auto faulty = run_requests_killing(self, e, requests, victim, 30, 5);
  for (const auto& r : requests) {
    BOOST_TEST_CONTEXT(victim << " killed, request " << r.id) {
      BOOST_TEST(faulty.at(r.id).events_after_finish == 0);
      BOOST_TEST(faulty.at(r.id).tokens == fault_free.at(r.id - 100).tokens);
      BOOST_TEST(int(faulty.at(r.id).finish) == int(finish_reason::length));
    }
  }
  BOOST_TEST(stats_of(self, e).recoveries > 0u, victim);
}

// Every request ended once, by length, with the tokens of its prompt run alone (greedy).
inline void expect_same_as_alone(const std::vector<generation_request>& requests,
                                 const std::map<request_id, outcome>& got) {
  for (const auto& r : requests) {
    const auto& o = got.at(r.id);
    BOOST_TEST_CONTEXT("request " << r.id) {
      BOOST_TEST(o.events_after_finish == 0);
      BOOST_TEST(int(o.finish) == int(finish_reason::length));
      BOOST_TEST(o.tokens == greedy_alone(model_alone(), r.prompt, r.max_tokens));
    }
  }
}

}  // namespace troupe::test
