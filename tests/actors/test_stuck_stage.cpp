// Progress liveness in one process: a pipeline stage whose thread blocks inside a step (the
// hang drill: as a hung device or a collective that never returns would) is declared stuck
// once the step has run past the progress timeout, and its supervisor replaces it with a
// new actor without waiting for the stuck one. The scheduler re-prefills the running
// sequences, so every request still ends once with the tokens of a fault-free run; and
// when the abandoned stage wakes up later, what it computed is dropped, not handed on into
// its successor's pipeline.
#define BOOST_TEST_MODULE stuck_stage
#include <boost/test/unit_test.hpp>

#include <thread>

#include "tests/actors/engine_harness.hpp"
#include "tests/support/eventually.hpp"

using namespace troupe;

namespace {

constexpr auto progress_timeout = std::chrono::milliseconds(300);
constexpr int hang_ms = 2000;

std::vector<generation_request> seeded_requests(int vocab) {
  auto requests = test::greedy_requests(16, 9, 120, vocab);
  for (auto& r : requests) {
    r.sampling.temperature = 0.8f;
    r.sampling.top_p = 0.9f;
    r.sampling.presence_penalty = 0.5f;  // histories at the last stage must replay too
    r.sampling.seed = r.id * 31;
  }
  return requests;
}

component_health health_of(caf::scoped_actor& self, const engine& e, const std::string& name) {
  component_health out;
  self->request(e.health, caf::infinite, health_atom::value)
      .receive(
          [&](std::vector<component_health> v) {
            for (const auto& c : v)
              if (c.name == name) out = c;
          },
          [](caf::error&) { BOOST_FAIL("no health answer"); });
  return out;
}

void expect_same(const std::vector<generation_request>& requests, const std::map<request_id, test::outcome>& got,
                 const std::map<request_id, test::outcome>& fault_free, request_id offset) {
  for (const auto& r : requests) {
    BOOST_TEST_CONTEXT("request " << r.id) {
      BOOST_TEST(got.at(r.id).events_after_finish == 0);
      BOOST_TEST(int(got.at(r.id).finish) == int(finish_reason::length));
      BOOST_TEST(got.at(r.id).tokens == fault_free.at(r.id - offset).tokens);
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_stage_stuck_in_a_step_is_replaced_and_its_requests_replay) {
  for (const std::string victim : {"stage_1", "stage_0"}) {
    BOOST_TEST_CONTEXT(victim << " hangs") {
      caf::actor_system system{test::engine_config()};
      auto options = test::fixture_options();
      options.pipeline_stages = 2;
      options.progress_timeout = progress_timeout;
      auto e = start_local_engine(system, options);
      BOOST_REQUIRE(e);
      caf::scoped_actor self{system};
      auto requests = seeded_requests(e->config.vocab_size);
      const auto fault_free = test::run_requests(self, *e, requests);

      for (auto& r : requests) r.id += 100;
      std::chrono::steady_clock::time_point hung;
      bool sent = false;
      const auto faulty = test::run_requests(self, *e, requests, [&](int seen) {
        if (seen < 200 || std::exchange(sent, true)) return;
        self->send(e->supervisor, hang_atom::value, victim, hang_ms);
        hung = std::chrono::steady_clock::now();
      });
      BOOST_REQUIRE(sent);
      // The requests did not wait for the stuck step to return: a new stage took over.
      BOOST_TEST((std::chrono::steady_clock::now() - hung < std::chrono::milliseconds(hang_ms)));
      expect_same(requests, faulty, fault_free, 100);
      const component_health h = health_of(self, *e, victim);
      BOOST_TEST(h.restarts == 1u);
      BOOST_TEST((h.ready && !h.stuck));
      BOOST_TEST(test::stats_of(self, *e).recoveries > 0u);

      // The abandoned stage wakes up while these run (other prompts, so that what it would
      // write into their KV blocks differs) and must not touch them.
      const auto woken = hung + std::chrono::milliseconds(hang_ms + 200);
      for (uint32_t round = 0; std::chrono::steady_clock::now() < woken; ++round) {
        auto others = test::greedy_requests(16, 21 + round, 120, e->config.vocab_size);
        for (auto& r : others) r.id += 1000 * (round + 1);
        test::expect_same_as_alone(others, test::run_requests(self, *e, others));
      }
      BOOST_TEST(health_of(self, *e, victim).restarts == 1u);
      e->stop(system);
    }
  }
}
