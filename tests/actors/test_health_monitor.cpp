// What /health reports: not ready until every expected component said so, not ready again
// after a restart or once the actor that said so is gone, the time since each last made
// progress, and a component stuck in one step past the progress timeout.
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
  self->request(h, caf::infinite, health_atom::value)
      .receive([&](std::vector<component_health> v) { out = v; }, [](caf::error&) { BOOST_FAIL("no answer"); });
  return out;
}

bool all_ready(const std::vector<component_health>& parts) {
  return !parts.empty() && std::all_of(parts.begin(), parts.end(), [](const auto& p) { return p.ready; });
}

}  // namespace

BOOST_AUTO_TEST_CASE(ready_only_when_every_expected_component_is) {
  caf::actor_system system{test::engine_config()};
  caf::scoped_actor self{system};
  auto h = system.spawn(health_monitor, std::chrono::milliseconds(30000));
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
  auto h = system.spawn(health_monitor, std::chrono::milliseconds(30000));
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

namespace {

// A component's actor: on "ready", "busy", "idle" or "progress" it tells the monitor so.
caf::actor component_actor(caf::actor_system& system, const health_monitor_actor& h, const std::string& name) {
  return system.spawn([h, name](caf::event_based_actor* a) -> caf::behavior {
    return {[=](const std::string& what) {
      if (what == "ready") a->send(h, ready_atom::value, name);
      if (what == "busy" || what == "idle") a->send(h, busy_atom::value, name, what == "busy");
      if (what == "progress") a->send(h, progress_atom::value, name);
    }};
  });
}

// The next stuck_atom message `self` receives, or "" within `within`.
std::string next_stuck(caf::scoped_actor& self, std::chrono::milliseconds within) {
  std::string name;
  self->receive([&](stuck_atom, const std::string& n) { name = n; }, caf::after(within) >> [] {});
  return name;
}

}  // namespace

// A component in one step for longer than the progress timeout is not ready from that
// moment, and its supervisor (who expected it) and the subscribers hear it is stuck within
// the check interval, once until it makes progress again; its own progress makes it ready
// again. A step that ended (even by failing) is no longer in flight, and messages of an
// actor other than the one that said ready do not count.
BOOST_AUTO_TEST_CASE(a_component_in_one_step_past_the_progress_timeout_is_stuck) {
  caf::actor_system system{test::engine_config()};
  caf::scoped_actor self{system};
  caf::scoped_actor subscriber{system};
  const auto timeout = std::chrono::milliseconds(300);
  auto h = system.spawn(health_monitor, timeout);
  self->send(h, expect_atom::value, std::string("stage_0"));
  self->send(h, subscribe_atom::value, caf::actor(subscriber));
  auto stage = component_actor(system, h, "stage_0");
  auto impostor = component_actor(system, h, "stage_0");
  self->send(stage, std::string("ready"));
  BOOST_TEST(test::eventually([&] { return all_ready(ask(self, h)); }));

  self->send(stage, std::string("busy"));
  self->send(stage, std::string("idle"));  // a failed step ends it too
  std::this_thread::sleep_for(timeout * 2);
  BOOST_TEST(all_ready(ask(self, h)));
  BOOST_TEST(next_stuck(self, std::chrono::milliseconds(0)) == "");

  self->send(impostor, std::string("busy"));  // not the reporter: ignored
  std::this_thread::sleep_for(timeout * 2);
  BOOST_TEST(all_ready(ask(self, h)));

  self->send(stage, std::string("busy"));
  const auto busy = std::chrono::steady_clock::now();
  BOOST_TEST(test::eventually([&] { return !all_ready(ask(self, h)); }, std::chrono::seconds(2)));
  const auto declared = std::chrono::steady_clock::now() - busy;
  BOOST_TEST(declared >= timeout, "not ready before the timeout passed");
  BOOST_TEST(ask(self, h).at(0).stuck);
  BOOST_TEST(next_stuck(self, std::chrono::milliseconds(500)) == "stage_0");
  BOOST_TEST(next_stuck(subscriber, std::chrono::milliseconds(500)) == "stage_0");
  BOOST_TEST(next_stuck(self, std::chrono::milliseconds(300)) == "", "told twice");

  self->send(impostor, std::string("progress"));  // a replaced actor's late progress
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  BOOST_TEST(!all_ready(ask(self, h)));
  self->send(stage, std::string("progress"));  // slow, not dead: nobody replaced it
  BOOST_TEST(test::eventually([&] { return all_ready(ask(self, h)); }));
  BOOST_TEST(!ask(self, h).at(0).stuck);

  // A replacement (restarted, then a new actor's ready) is a fresh start.
  self->send(stage, std::string("busy"));
  BOOST_TEST(next_stuck(self, std::chrono::seconds(2)) == "stage_0");
  BOOST_TEST(next_stuck(subscriber, std::chrono::milliseconds(500)) == "stage_0");
  self->send(h, restarted_atom::value, std::string("stage_0"));
  BOOST_TEST(ask(self, h).at(0).stuck, "why it is down is said until its replacement is ready");
  self->send(impostor, std::string("ready"));
  BOOST_TEST(test::eventually([&] { return all_ready(ask(self, h)); }));
  BOOST_TEST(ask(self, h).at(0).restarts == 1u);

  // The replacement stuck before it finished a step: not ready, and the subscribers hear
  // it, but its supervisor is not told again (a next replacement would wait on the same
  // thing); once it has made progress, a later stuck step is news to it again.
  self->send(impostor, std::string("busy"));
  BOOST_TEST(test::eventually([&] { return !all_ready(ask(self, h)); }, std::chrono::seconds(2)));
  BOOST_TEST(next_stuck(subscriber, std::chrono::milliseconds(500)) == "stage_0");
  BOOST_TEST(next_stuck(self, std::chrono::milliseconds(300)) == "");
  // Its stuck step failed in the end (a transfer timed out): it waits for its next step,
  // ready again (else /health would fail for ever with no step to make progress in); its
  // supervisor has still seen it finish none.
  self->send(impostor, std::string("idle"));
  BOOST_TEST(test::eventually([&] { return all_ready(ask(self, h)); }));
  self->send(impostor, std::string("busy"));
  BOOST_TEST(test::eventually([&] { return !all_ready(ask(self, h)); }, std::chrono::seconds(2)));
  BOOST_TEST(next_stuck(subscriber, std::chrono::milliseconds(500)) == "stage_0");
  BOOST_TEST(next_stuck(self, std::chrono::milliseconds(300)) == "");
  self->send(impostor, std::string("progress"));
  BOOST_TEST(test::eventually([&] { return all_ready(ask(self, h)); }));
  self->send(impostor, std::string("busy"));
  BOOST_TEST(next_stuck(self, std::chrono::seconds(2)) == "stage_0");
  for (const auto& a : {stage, impostor}) self->send_exit(a, caf::exit_reason::user_shutdown);
  self->send_exit(h, caf::exit_reason::user_shutdown);
}

// A component declared stuck again before it finished a step (its node restarted, and the
// new one's first step as slow: a congested link) gets twice the timeout each time, up to
// eight times; a finished step brings it back to the progress timeout.
BOOST_AUTO_TEST_CASE(stuck_again_without_a_finished_step_doubles_the_timeout) {
  caf::actor_system system{test::engine_config()};
  caf::scoped_actor self{system};
  const auto timeout = std::chrono::milliseconds(200);
  auto h = system.spawn(health_monitor, timeout);
  caf::scoped_actor subscriber{system};
  self->send(h, subscribe_atom::value, caf::actor(subscriber));
  auto stage = component_actor(system, h, "stage_1");
  self->send(stage, std::string("ready"));
  BOOST_TEST(test::eventually([&] { return all_ready(ask(self, h)); }));
  // How long a step of a ready component runs before it is declared stuck (which is what
  // restarts its node).
  auto declared_after = [&] {
    self->send(stage, std::string("busy"));
    const auto busy = std::chrono::steady_clock::now();
    BOOST_REQUIRE(next_stuck(subscriber, std::chrono::seconds(5)) == "stage_1");
    return std::chrono::steady_clock::now() - busy;
  };
  auto restart = [&] {
    self->send(h, restarted_atom::value, std::string("stage_1"));
    self->send(stage, std::string("ready"));
    BOOST_REQUIRE(test::eventually([&] { return all_ready(ask(self, h)); }));
  };
  const auto first = declared_after();
  BOOST_TEST((first >= timeout && first < timeout * 2));
  restart();
  const auto second = declared_after();
  BOOST_TEST((second >= timeout * 2 && second < timeout * 4));
  restart();
  const auto third = declared_after();
  BOOST_TEST((third >= timeout * 4 && third < timeout * 8));
  restart();
  BOOST_TEST((declared_after() >= timeout * 8));
  restart();
  const auto capped = declared_after();
  BOOST_TEST((capped >= timeout * 8 && capped < timeout * 12), "eight times at most");
  self->send(stage, std::string("progress"));  // a finished step
  BOOST_REQUIRE(test::eventually([&] { return all_ready(ask(self, h)); }));
  const auto back = declared_after();
  BOOST_TEST((back >= timeout && back < timeout * 2));
  self->send_exit(stage, caf::exit_reason::user_shutdown);
  self->send_exit(h, caf::exit_reason::user_shutdown);
}

// A stage waiting while another component of its replica is down (a node restarting) is
// waiting, not stuck: its step counts from when the replica is whole again. Another
// replica's stage is stuck all the same.
BOOST_AUTO_TEST_CASE(a_stage_waiting_on_a_component_that_is_down_is_not_stuck) {
  caf::actor_system system{test::engine_config()};
  caf::scoped_actor self{system};
  const auto timeout = std::chrono::milliseconds(300);
  auto h = system.spawn(health_monitor, timeout);
  for (const char* name : {"main/stage_0", "main/expert_group_0", "other/stage_0"})
    self->send(h, expect_atom::value, std::string(name));
  auto stage = component_actor(system, h, "main/stage_0");
  auto group = component_actor(system, h, "main/expert_group_0");
  auto other = component_actor(system, h, "other/stage_0");
  for (const auto& a : {stage, group, other}) self->send(a, std::string("ready"));
  BOOST_TEST(test::eventually([&] { return all_ready(ask(self, h)); }));
  auto stuck = [&](const std::string& name) {
    for (const auto& c : ask(self, h))
      if (c.name == name) return c.stuck;
    return false;
  };
  self->send_exit(group, caf::exit_reason::kill);  // its node's process died
  BOOST_TEST(test::eventually([&] { return !all_ready(ask(self, h)); }));
  self->send(stage, std::string("busy"));
  self->send(other, std::string("busy"));
  std::this_thread::sleep_for(timeout * 2);
  BOOST_TEST(!stuck("main/stage_0"));
  BOOST_TEST(stuck("other/stage_0"));
  auto back = component_actor(system, h, "main/expert_group_0");
  self->send(back, std::string("ready"));
  const auto whole = std::chrono::steady_clock::now();
  BOOST_TEST(test::eventually([&] { return stuck("main/stage_0"); }, std::chrono::seconds(2)));
  BOOST_TEST((std::chrono::steady_clock::now() - whole >= timeout - std::chrono::milliseconds(20)),
             "its step counted from before the replica was whole again");
  for (const auto& a : {stage, back, other}) self->send_exit(a, caf::exit_reason::user_shutdown);
  self->send_exit(h, caf::exit_reason::user_shutdown);
}

// A replica removed at runtime is forgotten whole, by its prefix; the others stay.
BOOST_AUTO_TEST_CASE(a_removed_replica_is_forgotten) {
  caf::actor_system system{test::engine_config()};
  caf::scoped_actor self{system};
  auto h = system.spawn(health_monitor, std::chrono::milliseconds(30000));
  for (const char* name : {"blue/stage_0", "green/stage_0", "green/expert_group_0", "greenish/stage_0"}) {
    self->send(h, expect_atom::value, std::string(name));
    self->send(h, ready_atom::value, std::string(name));
  }
  self->send(h, forget_atom::value, std::string("green/"));
  std::vector<std::string> names;
  for (const auto& p : ask(self, h)) names.push_back(p.name);
  BOOST_TEST(names == (std::vector<std::string>{"blue/stage_0", "greenish/stage_0"}), boost::test_tools::per_element());
  self->send_exit(h, caf::exit_reason::user_shutdown);
}
