// What /health reports: not ready until every expected component said so, not ready again
// after a restart or once the actor that said so is gone, and the time since each last
// made progress.
#define BOOST_TEST_MODULE health_monitor
#include <boost/test/unit_test.hpp>

#include <thread>

#include "actors/health_monitor.hpp"
#include "tests/actors/engine_harness.hpp"
#include "tests/support/eventually.hpp"

using namespace troupe;

namespace {

std::vector<component_health> ask(caf::scoped_actor& self, const health_monitor_actor& h) {
  std::vector<component_health> out;
  self->request(h, caf::infinite, health_atom::value).receive([&](std::vector<component_health> v) { out = v; },
                                                              [](caf::error&) { BOOST_FAIL("no answer"); });
  return out;
}

bool all_ready(const std::vector<component_health>& parts) {
  return !parts.empty() && std::all_of(parts.begin(), parts.end(), [](const auto& p) { return p.ready; });
}

}  // namespace

BOOST_AUTO_TEST_CASE(ready_only_when_every_expected_component_is) {
  caf::actor_system system{test::engine_config()};
  caf::scoped_actor self{system};
  auto h = system.spawn(health_monitor);
  self->send(h, expect_atom::value, std::string("stage_0"));
  self->send(h, expect_atom::value, std::string("expert_group_0"));
  BOOST_TEST(!all_ready(ask(self, h)));
  self->send(h, ready_atom::value, std::string("stage_0"));
  BOOST_TEST(!all_ready(ask(self, h)));
  self->send(h, ready_atom::value, std::string("expert_group_0"));
  BOOST_TEST(all_ready(ask(self, h)));

  self->send(h, restarted_atom::value, std::string("stage_0"));
  auto parts = ask(self, h);
  BOOST_TEST(!all_ready(parts));
  BOOST_TEST(parts[1].name == "stage_0");
  BOOST_TEST(parts[1].restarts == 1u);
  self->send(h, ready_atom::value, std::string("stage_0"));
  BOOST_TEST(all_ready(ask(self, h)));

  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  self->send(h, progress_atom::value, std::string("stage_0"));
  parts = ask(self, h);
  BOOST_TEST(parts[0].seconds_since_progress >= 0.2);  // expert_group_0: no progress since ready
  BOOST_TEST(parts[1].seconds_since_progress < 0.2);
  self->send_exit(h, caf::exit_reason::user_shutdown);
}

// A component whose actor ends (a crash, or its node gone) is not ready, even though no
// supervisor said it restarted; a new actor's ready makes it ready again.
BOOST_AUTO_TEST_CASE(a_component_whose_actor_ends_is_not_ready) {
  caf::actor_system system{test::engine_config()};
  caf::scoped_actor self{system};
  auto h = system.spawn(health_monitor);
  auto say_ready = [&](const std::string& name) {
    return system.spawn([h, name](caf::event_based_actor* a) -> caf::behavior {
      a->send(h, ready_atom::value, name);
      return {[](int) {}};
    });
  };
  auto first = say_ready("stage_0");
  BOOST_TEST(test::eventually([&] { return all_ready(ask(self, h)); }));
  self->send_exit(first, caf::exit_reason::kill);
  BOOST_TEST(test::eventually([&] { return !all_ready(ask(self, h)); }));
  BOOST_TEST(ask(self, h).at(0).restarts == 0u);
  auto second = say_ready("stage_0");
  BOOST_TEST(test::eventually([&] { return all_ready(ask(self, h)); }));
  self->send_exit(second, caf::exit_reason::user_shutdown);
  self->send_exit(h, caf::exit_reason::user_shutdown);
}
