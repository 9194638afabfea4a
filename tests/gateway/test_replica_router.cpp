// The gateway's choice of replica: weighted shares per policy, session and prefix
// affinity that survives weight changes, drained and unhealthy replicas, circuit breaking
// and ramped weights. Time is passed in, so the cool-downs and ramps are exact.
#define BOOST_TEST_MODULE replica_router
#include <boost/test/unit_test.hpp>

#include <map>
#include <random>

#include "gateway/replica_router.hpp"

using namespace troupe;
using namespace std::chrono_literals;
using clock_type = replica_router::clock;

namespace {

const clock_type::time_point t0 = clock_type::time_point{} + 1h;

std::vector<int> random_prompt(std::mt19937& rng) {
  std::vector<int> p(20 + rng() % 50);
  for (int& t : p) t = int(rng() % 150000);
  return p;
}

// Picks (each finished at once) and counts them per replica name.
std::map<std::string, int> shares(replica_router& router, int picks, std::mt19937& rng, bool sessions = false) {
  std::map<std::string, int> count;
  for (int i = 0; i < picks; ++i) {
    const std::string session = sessions ? "user-" + std::to_string(rng()) : "";
    auto r = router.pick(session, random_prompt(rng), t0);
    BOOST_REQUIRE(r);
    ++count[router.name(*r)];
    router.finished(*r, false, t0);
  }
  return count;
}

}  // namespace

BOOST_AUTO_TEST_CASE(round_robin_gives_exact_weighted_shares_evenly_interleaved) {
  replica_router router({"a", "b", "c"}, {3, 1, 0}, routing_policy::round_robin);
  std::string order;
  for (int i = 0; i < 400; ++i) {
    auto r = router.pick("", {1, 2, 3}, t0);
    BOOST_REQUIRE(r);
    order += router.name(*r);
    router.finished(*r, false, t0);
  }
  BOOST_TEST(std::count(order.begin(), order.end(), 'a') == 300);
  BOOST_TEST(std::count(order.begin(), order.end(), 'b') == 100);
  BOOST_TEST(order.find("aaaa") == std::string::npos, "a ran four times in a row: " << order.substr(0, 40));
}

// A replica that leaves round robin (unhealthy here; drained, removed or with an open
// circuit alike) leaves the others' shares exact and interleaved from the next pick: c's
// departure after c, a would otherwise have b take three of the next four.
BOOST_AUTO_TEST_CASE(round_robin_shares_stay_exact_when_a_replica_leaves) {
  replica_router router({"a", "b", "c"}, {1, 1, 2}, routing_policy::round_robin);
  std::string order;
  for (int i = 0; i < 2; ++i) order += router.name(*router.pick("", {}, t0));
  BOOST_REQUIRE(order == "ca");
  router.set_healthy(2, false);
  order.clear();
  for (int i = 0; i < 4; ++i) order += router.name(*router.pick("", {}, t0));
  BOOST_TEST(order == "abab");
}

BOOST_AUTO_TEST_CASE(least_load_takes_the_fewest_in_flight_per_weight) {
  replica_router router({"a", "b"}, {2, 1}, routing_policy::least_load);
  std::map<std::string, int> open;
  for (int i = 0; i < 30; ++i) ++open[router.name(*router.pick("", {}, t0))];  // none finishes
  BOOST_TEST(open["a"] == 20);
  BOOST_TEST(open["b"] == 10);
}

BOOST_AUTO_TEST_CASE(prefix_aware_keeps_a_prefix_on_one_replica_and_spreads_by_weight) {
  replica_router router({"a", "b", "c"}, {1, 1, 2}, routing_policy::prefix_aware);
  std::mt19937 rng(7);
  std::vector<int> prompt(100);
  for (int& t : prompt) t = int(rng() % 150000);
  const size_t first = *router.pick("", prompt, t0);
  for (int i = 0; i < 20; ++i) {
    auto longer = prompt;
    longer.insert(longer.end(), {int(rng() % 100), int(rng() % 100)});  // same first 64 tokens
    BOOST_TEST(*router.pick("", longer, t0) == first);
  }
  auto count = shares(router, 8000, rng);
  BOOST_TEST(std::abs(count["c"] - 4000) < 300, count["c"]);
  BOOST_TEST(std::abs(count["a"] - 2000) < 250, count["a"]);
}

BOOST_AUTO_TEST_CASE(a_session_keeps_its_replica_and_a_new_replica_takes_only_its_share) {
  replica_router router({"a", "b", "c"}, {1, 1, 0}, routing_policy::round_robin);
  std::map<std::string, size_t> before;
  for (int i = 0; i < 3000; ++i) {
    const std::string s = "session-" + std::to_string(i);
    before[s] = *router.pick(s, {}, t0);
    BOOST_TEST(*router.pick(s, {9, 9}, t0) == before[s]);  // whatever the prompt or policy
  }
  BOOST_REQUIRE(router.set_weights({{"c", 1}}, 0ms, t0));
  int moved = 0, moved_elsewhere = 0;
  for (const auto& [s, r] : before) {
    const size_t now = *router.pick(s, {}, t0);
    if (now != r) ++moved;
    if (now != r && router.name(now) != "c") ++moved_elsewhere;
  }
  BOOST_TEST(moved_elsewhere == 0, "sessions moved between the replicas that stayed");
  BOOST_TEST(std::abs(moved - 1000) < 150, moved);  // a third go to the new replica
}

// Drained replicas take nothing new; unhealthy ones only when no healthy one is left.
BOOST_AUTO_TEST_CASE(drained_and_unhealthy_replicas_take_no_new_requests) {
  replica_router router({"a", "b"}, {1, 1}, routing_policy::round_robin);
  const size_t a = *router.pick("", {}, t0);  // in flight on a
  BOOST_REQUIRE(router.name(a) == "a");
  BOOST_REQUIRE(router.set_weights({{"a", 0}}, 0ms, t0));
  std::mt19937 rng(3);
  BOOST_TEST(shares(router, 50, rng, true)["a"] == 0);
  router.finished(a, false, t0);  // the drained replica's request still ends normally
  BOOST_TEST(router.view(t0)[a].in_flight == 0);
  BOOST_REQUIRE(router.set_weights({{"a", 1}}, 0ms, t0));
  router.set_healthy(1, false);
  BOOST_TEST(shares(router, 50, rng, true)["a"] == 50);
  router.set_healthy(0, false);  // none healthy: both take requests again, to queue them
  BOOST_TEST(shares(router, 50, rng, false)["b"] == 25);
  BOOST_REQUIRE(router.set_weights({{"a", 0}}, 0ms, t0));
  router.finished(*router.pick("", {}, t0), true, t0);  // b's circuit (5 failures) opens
  for (int i = 0; i < 4; ++i) router.finished(1, true, t0);
  BOOST_TEST(!router.pick("", {}, t0), "drained or failing: nobody takes it");
  BOOST_TEST(!router.pick("a session", {}, t0));
}

// least_load with every request finished at once picks a whenever a is routable.
BOOST_AUTO_TEST_CASE(consecutive_failures_open_the_circuit_until_a_trial_succeeds) {
  replica_router router({"a", "b"}, {1, 1}, routing_policy::least_load, {3, 5000ms});
  auto pick_and_finish = [&](clock_type::time_point at) {
    const size_t r = *router.pick("", {}, at);
    router.finished(r, false, at);
    return r;
  };
  for (int i = 0; i < 3; ++i) router.finished(0, true, t0);  // three failed requests on a
  BOOST_TEST(router.view(t0)[0].circuit_open);
  for (int i = 0; i < 10; ++i) BOOST_TEST(pick_and_finish(t0) == 1u);
  const auto later = t0 + 5001ms;  // half-open: one trial
  BOOST_TEST(*router.pick("", {}, later) == 0u);
  BOOST_TEST(pick_and_finish(later) == 1u, "a second trial while the first runs");
  router.finished(0, true, later);  // the trial failed: open again
  BOOST_TEST(router.view(later)[0].circuit_open);
  BOOST_TEST(pick_and_finish(later + 4000ms) == 1u);
  const auto after = later + 5001ms;
  BOOST_TEST(pick_and_finish(after) == 0u);  // the trial succeeded: closed
  BOOST_TEST(!router.view(after)[0].circuit_open);
  for (int i = 0; i < 10; ++i) BOOST_TEST(pick_and_finish(after) == 0u);
}

BOOST_AUTO_TEST_CASE(weights_ramp_linearly_and_bad_weights_change_nothing) {
  replica_router router({"blue", "green"}, {1, 0}, routing_policy::round_robin);
  BOOST_REQUIRE(router.set_weights({{"blue", 0}, {"green", 1}}, 10000ms, t0));
  auto half = router.view(t0 + 5000ms);
  BOOST_TEST(half[0].weight == 0.5, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(half[1].weight == 0.5, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(router.view(t0 + 20000ms)[1].weight == 1.0);
  BOOST_TEST(!router.set_weights({{"red", 1}}, 0ms, t0));
  BOOST_TEST(!router.set_weights({{"green", -1}}, 0ms, t0));
  BOOST_TEST(!router.set_weights({{"green", 0}}, 0ms, t0 + 20000ms));  // blue is 0 too: nothing left
  BOOST_TEST(router.view(t0 + 20000ms)[1].weight == 1.0);
  BOOST_TEST(!routing_policy_named("random"));
  BOOST_TEST((routing_policy_named("least_load").value() == routing_policy::least_load));
}

// Removing a replica: it drains (nothing new, its calls in flight still end), may stop
// only once none is left in flight, and leaves the view and the weights' reach when off.
BOOST_AUTO_TEST_CASE(a_removed_replica_drains_then_leaves_routing) {
  replica_router router({"a", "b"}, {1, 1}, routing_policy::round_robin);
  std::vector<size_t> on_a;
  for (int i = 0; i < 6; ++i) {
    const size_t r = *router.pick("", {}, t0);
    if (router.name(r) == "a") on_a.push_back(r);
  }
  BOOST_REQUIRE(on_a.size() == 3u);
  BOOST_REQUIRE(router.begin_remove(0, t0));
  BOOST_TEST((router.state(0) == replica_state::draining));
  std::mt19937 rng(5);
  BOOST_TEST(shares(router, 40, rng, true)["a"] == 0, "a session moved to the draining replica");
  BOOST_TEST(shares(router, 40, rng)["a"] == 0);
  for (size_t i = 0; i < on_a.size(); ++i) {
    BOOST_TEST(!router.drained(0), "drained with calls in flight");
    router.finished(on_a[i], false, t0);
  }
  BOOST_TEST(router.drained(0));
  router.mark(0, replica_state::stopping);
  BOOST_TEST(!router.drained(0));
  router.mark(0, replica_state::off);
  const auto view = router.view(t0);
  BOOST_REQUIRE(view.size() == 1u);
  BOOST_TEST(view[0].name == "b");
  BOOST_TEST(!router.set_weights({{"a", 1}}, 0ms, t0), "a weight for a replica that is off");
  BOOST_TEST(shares(router, 20, rng)["b"] == 20);
}

BOOST_AUTO_TEST_CASE(the_last_serving_replica_and_one_not_serving_cannot_be_removed) {
  replica_router router({"a", "b", "c"}, {1, 0, 1}, routing_policy::least_load);
  router.mark(2, replica_state::off);  // a standby
  auto removed = router.begin_remove(0, t0);
  BOOST_REQUIRE(!removed);  // b serves, but with weight 0
  BOOST_TEST(removed.err().message.find("last serving replica") != std::string::npos, removed.err().message);
  BOOST_TEST(!router.begin_remove(2, t0), "c is off");
  BOOST_REQUIRE(router.set_weights({{"b", 1}}, 0ms, t0));
  BOOST_REQUIRE(router.begin_remove(0, t0));
  BOOST_TEST(!router.begin_remove(0, t0), "a is draining already");
  BOOST_TEST(!router.begin_remove(1, t0), "b is the last one left");
  BOOST_TEST(!router.set_weights({{"b", 0}}, 0ms, t0), "no serving replica would have a weight");
}

// Adding: only an off replica starts; it takes nothing until it is added, then its weight
// rises from 0 over its own ramp while the others' weights stay.
BOOST_AUTO_TEST_CASE(an_added_replica_serves_once_ready_and_ramps_up) {
  replica_router router({"a", "b"}, {1, 2}, routing_policy::round_robin);
  router.mark(1, replica_state::off);
  BOOST_TEST(!router.begin_add(0), "a serves already");
  BOOST_REQUIRE(router.begin_add(1));
  BOOST_TEST(!router.begin_add(1), "b is starting already");
  std::mt19937 rng(9);
  BOOST_TEST(shares(router, 20, rng)["a"] == 20, "a starting replica took a call");
  BOOST_TEST((router.view(t0)[1].state == replica_state::starting));
  router.added(1, 2, 10000ms, t0);
  const auto half = router.view(t0 + 5000ms);
  BOOST_TEST(half[0].weight == 1.0);
  BOOST_TEST(half[1].weight == 1.0, boost::test_tools::tolerance(1e-9));
  const auto later = t0 + 10000ms;
  std::map<std::string, int> count;
  for (int i = 0; i < 300; ++i) {
    const size_t r = *router.pick("", {}, later);
    ++count[router.name(r)];
    router.finished(r, false, later);
  }
  BOOST_TEST(count["b"] == 200);
  // Removed and added again: it serves as before.
  BOOST_REQUIRE(router.begin_remove(1, later));
  router.mark(1, replica_state::off);
  BOOST_REQUIRE(router.begin_add(1));
  router.added(1, 1, 0ms, later);
  BOOST_TEST(std::abs(shares(router, 20, rng)["b"] - 10) <= 1);
  BOOST_TEST((replica_state_named("draining").value() == replica_state::draining));
  BOOST_TEST(!replica_state_named("gone"));
}
