// shutdown(): every actor is sent its exit and waited for; one that ignores the exit is
// given up on once the grace period has passed, and the count says so.
#define BOOST_TEST_MODULE shutdown
#include <boost/test/unit_test.hpp>

#include <chrono>

#include "actors/shutdown.hpp"
#include "tests/actors/engine_harness.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

caf::behavior idle(caf::event_based_actor*) {
  return {[](int) {}};
}

// Takes its exit message as a plain message and goes on.
caf::behavior stubborn(caf::event_based_actor* self) {
  self->set_exit_handler([](caf::exit_msg&) {});
  return {[](int) {}};
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_actor_ends_and_is_waited_for) {
  caf::actor_system system{test::engine_config()};
  caf::scoped_actor self{system};
  std::vector<caf::actor> actors{system.spawn(idle), caf::actor{}, system.spawn(idle), system.spawn(idle)};
  const auto began = std::chrono::steady_clock::now();
  BOOST_TEST(shutdown(self, actors, 10s) == 0u);
  BOOST_TEST((std::chrono::steady_clock::now() - began < 5s));
  // Down already: a second shutdown finds nothing to wait for.
  BOOST_TEST(shutdown(self, actors, 1s) == 0u);
}

BOOST_AUTO_TEST_CASE(an_actor_that_ignores_its_exit_is_given_up_on_after_the_grace) {
  caf::actor_system system{test::engine_config()};
  caf::scoped_actor self{system};
  auto holdout = system.spawn(stubborn);
  std::vector<caf::actor> actors{system.spawn(idle), holdout};
  const auto began = std::chrono::steady_clock::now();
  BOOST_TEST(shutdown(self, actors, 200ms) == 1u);
  const auto took = std::chrono::steady_clock::now() - began;
  BOOST_TEST((took >= 180ms));  // the grace, less a timer's slack
  BOOST_TEST((took < 5s));
  self->send_exit(holdout, caf::exit_reason::kill);
}
