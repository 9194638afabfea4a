// The control plane of expert parallelism across GPUs, without a GPU: the scheduler tells a
// stage where each expert group runs whenever either (re)starts, and when one goes down; a stage's
// expert_peer_handles follow those actors (a new one is a new generation: the NCCL
// communicator is joined again) and send the joins and steps to the right ones; an expert
// group with a server hands them to it in order, lives on when one fails, and ends with the
// reason when its server cannot be made.
#define BOOST_TEST_MODULE expert_parallel_actors
#include <boost/test/unit_test.hpp>

#include <mutex>

#include "actors/expert_group.hpp"
#include "actors/expert_peer_handles.hpp"
#include "actors/health_monitor.hpp"
#include "actors/kv_manager.hpp"
#include "actors/scheduler.hpp"
#include "tests/actors/engine_harness.hpp"
#include "tests/support/eventually.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

// The next (group, actor) a stand-in stage hears; group -1 when none comes in time.
std::pair<int, caf::actor> next_group(caf::scoped_actor& stage) {
  std::pair<int, caf::actor> heard{-1, {}};
  stage->receive(
      [&](expert_group_atom, int g, const caf::actor& a) {
        heard = {g, a};
      },
      caf::after(std::chrono::seconds(5)) >> [] {});
  return heard;
}

caf::actor idle_actor(caf::actor_system& system) {
  return system.spawn([]() -> caf::behavior { return {[](int) {}}; });
}

// An actor that tells `sink` (tag, what, number) of every join and step it gets.
caf::actor recorder(caf::actor_system& system, int tag, caf::actor sink) {
  return system.spawn([=](caf::event_based_actor* self) -> caf::behavior {
    return {
        [=](expert_join_atom, const expert_session& s) { self->send(sink, tag, std::string("join"), s.rank); },
        [=](expert_step_atom, const expert_step& s) { self->send(sink, tag, std::string("step"), s.tokens); },
    };
  });
}

std::tuple<int, std::string, int> next_record(caf::scoped_actor& self) {
  std::tuple<int, std::string, int> r{-1, "", 0};
  self->receive(
      [&](int tag, const std::string& what, int n) {
        r = {tag, what, n};
      },
      caf::after(std::chrono::seconds(5)) >> [] {});
  return r;
}

// A server that writes down what it is asked, failing a step of 13 tokens.
struct server_log {
  std::mutex mutex;
  std::vector<std::string> calls;
  void add(std::string call) {
    std::lock_guard lock(mutex);
    calls.push_back(std::move(call));
  }
  size_t size() {
    std::lock_guard lock(mutex);
    return calls.size();
  }
};

class logging_server final : public remote_expert_server {
 public:
  explicit logging_server(std::shared_ptr<server_log> log) : log_(std::move(log)) {}
  status join(const expert_session& s) override {
    log_->add("join stage " + std::to_string(s.stage) + " rank " + std::to_string(s.rank));
    return ok();
  }
  status serve(const expert_step& s) override {
    log_->add("step of " + std::to_string(s.tokens));
    if (s.tokens == 13) return error{"the stage went away"};
    return ok();
  }

 private:
  std::shared_ptr<server_log> log_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_stage_hears_where_each_expert_group_runs_when_either_starts) {
  caf::actor_system system{test::engine_config()};
  caf::scoped_actor stage{system}, restarted{system};
  auto kv = system.spawn(kv_manager, 16, 4, 0);
  scheduler_options o;
  o.expert_groups = 2;
  o.component_prefix = "main/";
  auto scheduler = system.spawn(troupe::scheduler, o, kv);
  const caf::actor g0 = idle_actor(system), g1 = idle_actor(system), g1_again = idle_actor(system);

  stage->send(scheduler, child_up_atom::value, std::string("main/stage_0"), caf::actor(stage));
  stage->send(scheduler, child_up_atom::value, std::string("main/expert_group_0"), g0);
  BOOST_TEST((next_group(stage) == std::pair<int, caf::actor>{0, g0}));
  stage->send(scheduler, child_up_atom::value, std::string("main/expert_group_1"), g1);
  BOOST_TEST((next_group(stage) == std::pair<int, caf::actor>{1, g1}));
  stage->send(scheduler, child_up_atom::value, std::string("main/expert_group_1"), g1_again);
  BOOST_TEST((next_group(stage) == std::pair<int, caf::actor>{1, g1_again}));

  // A stage started again hears every group at once.
  restarted->send(scheduler, child_up_atom::value, std::string("main/stage_0"), caf::actor(restarted));
  BOOST_TEST((next_group(restarted) == std::pair<int, caf::actor>{0, g0}));
  BOOST_TEST((next_group(restarted) == std::pair<int, caf::actor>{1, g1_again}));
  // A group that goes down is no one's to reach until it is back.
  anon_send_exit(g0, caf::exit_reason::kill);
  BOOST_TEST((next_group(restarted) == std::pair<int, caf::actor>{0, caf::actor{}}));
  for (const caf::actor& a :
       {caf::actor_cast<caf::actor>(scheduler), caf::actor_cast<caf::actor>(kv), g0, g1, g1_again})
    anon_send_exit(a, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(peer_handles_follow_the_groups_and_message_the_right_ones) {
  caf::actor_system system{test::engine_config()};
  caf::scoped_actor self{system};
  // Ranks 1 and 2: the replica's groups 1 and 3.
  expert_peer_handles peers({1, 3}, {"main/expert_group_1 on node b", "main/expert_group_3 on node d"});
  BOOST_TEST(peers.missing() == "main/expert_group_1 on node b, main/expert_group_3 on node d");
  const uint64_t before = peers.generation();
  const caf::actor r1 = recorder(system, 1, self), r3 = recorder(system, 3, self);
  peers.place(0, r1);  // a group this stage does not reach
  BOOST_TEST(peers.generation() == before);
  peers.place(1, r1);
  BOOST_TEST(peers.generation() == before + 1);
  BOOST_TEST(peers.missing() == "main/expert_group_3 on node d");
  peers.place(1, r1);  // the same actor again: nothing changed
  BOOST_TEST(peers.generation() == before + 1);
  peers.place(3, r3);
  BOOST_TEST(peers.generation() == before + 2);
  BOOST_TEST(peers.missing() == "");

  peers.invite({0, 7, {1, 2}, 2, 3});
  BOOST_TEST((next_record(self) == std::tuple<int, std::string, int>{3, "join", 2}));
  peers.announce({0, 7, 33, 0, 48});
  auto a = next_record(self), b = next_record(self);
  if (std::get<0>(a) == 3) std::swap(a, b);
  BOOST_TEST((a == std::tuple<int, std::string, int>{1, "step", 33}));
  BOOST_TEST((b == std::tuple<int, std::string, int>{3, "step", 33}));
  for (const caf::actor& x : {r1, r3}) anon_send_exit(x, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(an_expert_group_hands_joins_and_steps_to_its_server_and_outlives_a_failed_step) {
  caf::actor_system system{test::engine_config()};
  caf::scoped_actor self{system};
  auto health = system.spawn(health_monitor, std::chrono::milliseconds(30000));
  auto log = std::make_shared<server_log>();
  auto attached = std::make_shared<std::atomic<int>>(0);
  experts_attacher attach = [attached](const std::string&, int, int) -> std::function<void()> {
    ++*attached;
    return [attached] { --*attached; };
  };
  expert_group_options o{"main/expert_group_1", 8, 16, [log]() -> result<std::unique_ptr<remote_expert_server>> {
                           return std::unique_ptr<remote_expert_server>(std::make_unique<logging_server>(log));
                         }};
  auto group = system.spawn<caf::detached>(expert_group, o, attach, health);
  self->send(group, expert_join_atom::value, expert_session{0, 5, {9}, 1, 2});
  for (int tokens : {4, 13, 6}) self->send(group, expert_step_atom::value, expert_step{0, 5, tokens, 0, 48});
  BOOST_REQUIRE(test::eventually([&] { return log->size() == 4; }));
  {
    std::lock_guard lock(log->mutex);
    BOOST_TEST((log->calls == std::vector<std::string>{"join stage 0 rank 1", "step of 4", "step of 13", "step of 6"}));
  }
  BOOST_TEST(attached->load() == 1);
  self->monitor(group);
  self->send_exit(group, caf::exit_reason::user_shutdown);
  self->receive([](const caf::down_msg&) {});
  BOOST_TEST(test::eventually([&] { return attached->load() == 0; }));
  anon_send_exit(health, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(an_expert_group_whose_server_cannot_be_made_ends_saying_why) {
  caf::actor_system system{test::engine_config()};
  caf::scoped_actor self{system};
  auto health = system.spawn(health_monitor, std::chrono::milliseconds(30000));
  experts_attacher attach = [](const std::string&, int, int) -> std::function<void()> { return [] {}; };
  expert_group_options o{"main/expert_group_1", 8, 16, []() -> result<std::unique_ptr<remote_expert_server>> {
                           return error{"no device memory for its buffers"};
                         }};
  auto group = system.spawn<caf::detached>(expert_group, o, attach, health);
  self->monitor(group);
  std::string reason;
  self->receive([&](const caf::down_msg& d) { reason = system.render(d.reason); },
                caf::after(std::chrono::seconds(5)) >> [] {});
  BOOST_TEST(reason.find("main/expert_group_1: no device memory for its buffers") != std::string::npos, reason);
  anon_send_exit(health, caf::exit_reason::user_shutdown);
}
