// What only the UCX transport does: it takes every message as it arrives and drops what
// nobody receives in time, a send that times out closes its link (UCX cannot cancel a
// send), and exchanges with a separate process (ucx_echo_peer), which echoes every
// size or is killed mid-exchange. Timeouts are generous for a loaded 2-core CI machine.
#define BOOST_TEST_MODULE ucx_transport
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "tests/support/error_text.hpp"
#include "tests/support/eventually.hpp"
#include "tests/transport/byte_pattern.hpp"
#include "tests/transport/echo_peer.hpp"
#include "tests/transport/keep_unreceived.hpp"
#include "tests/transport/node_exchange.hpp"
#include "transport/tags.hpp"
#include "transport/ucx_transport.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

constexpr auto patience = 20s;
constexpr uint64_t exact = ~uint64_t{0};

std::unique_ptr<ucx_transport> make_endpoint() {
  auto t = ucx_transport::create(test::keep_unreceived);
  BOOST_REQUIRE_MESSAGE(t, test::error_text(t));
  return std::move(t).value();
}

test::echo_peer start_echo_peer() {
  auto p = test::start_echo_peer(UCX_ECHO_PEER, patience);
  BOOST_REQUIRE_MESSAGE(p, test::error_text(p));
  return std::move(p).value();
}

// A ucx_node_peer process: a node of a three-node cluster whose other nodes are the test
// process and another ucx_node_peer.
struct node_process {
  std::unique_ptr<test::child_process> child = std::make_unique<test::child_process>(UCX_NODE_PEER);
  std::vector<uint8_t> address;
  std::vector<std::string> failures;  // its "failed" lines read so far

  node_process() {
    BOOST_REQUIRE(child->started());
    const std::string prefix = test::address_prefix;
    auto line = child->read_line(patience);
    while (line && !line->starts_with(prefix)) line = child->read_line(patience);
    BOOST_REQUIRE_MESSAGE(line, "ucx_node_peer printed no address");
    address = test::from_hex(line->substr(prefix.size()));
  }

  // Sends a command and waits for its answer, keeping the failures printed meanwhile.
  void command(const std::string& line) {
    BOOST_REQUIRE(child->write_line(line));
    for (;;) {
      auto answer = child->read_line(patience);
      BOOST_REQUIRE_MESSAGE(answer, "no answer to " << line.substr(0, 16));
      if (answer->starts_with("failed ")) {
        failures.push_back(*answer);
        continue;
      }
      BOOST_REQUIRE_MESSAGE(*answer == "ok", line.substr(0, 16) << ": " << *answer);
      return;
    }
  }

  void read_failures(std::chrono::milliseconds within) {
    while (auto line = child->read_line(within))
      if (line->starts_with("failed ")) failures.push_back(*line);
  }
};

std::string peers_command(int self, const std::vector<std::vector<uint8_t>>& addresses) {
  std::string line = "peers " + std::to_string(self);
  for (const auto& a : addresses) line += " " + test::to_hex(a);
  return line;
}

}  // namespace

// A send returns at once, even a rendezvous-sized one nobody receives, and the receiving
// transport takes it anyway: the send ends, and the link stays up. A send held until its
// timeout closed the link and dropped what came after it on the link: a reply to a failed
// step, never received, so cut off the replies a stage of a later step awaited, which the
// chaos drills saw as a 14 to 30 s stall at an unhurt node.
BOOST_AUTO_TEST_CASE(a_message_nobody_receives_holds_up_neither_its_sender_nor_the_messages_after_it) {
  auto a = make_endpoint();
  auto b = make_endpoint();
  auto id = a->connect(b->address());
  BOOST_REQUIRE_MESSAGE(id, test::error_text(id));

  const auto unwanted = test::byte_pattern(size_t{8} << 20, 1), awaited = test::byte_pattern(size_t{8} << 20, 2);
  const auto timeout = 2s;  // b's transport takes both well within it, on a loaded host too
  const auto start = std::chrono::steady_clock::now();
  BOOST_REQUIRE(a->send(*id, make_tag(channel::moe_combine, 0, 1), unwanted.data(), unwanted.size(), timeout));
  BOOST_REQUIRE(a->send(*id, make_tag(channel::moe_combine, 0, 2), awaited.data(), awaited.size(), timeout));
  BOOST_TEST((std::chrono::steady_clock::now() - start < timeout), "a send waited for the receiver");
  std::this_thread::sleep_for(timeout + 1s);  // past both sends' timeouts

  auto m = b->receive(make_tag(channel::moe_combine, 0, 2), exact, patience);
  BOOST_REQUIRE_MESSAGE(m, test::error_text(m));
  BOOST_TEST((m->bytes == awaited));
}

// What nobody receives is dropped once the time the transport was made with has passed;
// what comes after is taken as ever.
BOOST_AUTO_TEST_CASE(a_message_nobody_receives_is_dropped_after_the_time_given) {
  auto a = make_endpoint();
  auto made = ucx_transport::create(300ms);
  BOOST_REQUIRE_MESSAGE(made, test::error_text(made));
  auto b = std::move(made).value();
  auto id = a->connect(b->address());
  BOOST_REQUIRE_MESSAGE(id, test::error_text(id));
  const auto bytes = test::byte_pattern(4096, 3);
  BOOST_REQUIRE(a->send(*id, make_tag(channel::residual, 0, 1), bytes.data(), bytes.size(), patience));
  BOOST_REQUIRE(a->send(*id, make_tag(channel::residual, 0, 2), bytes.data(), bytes.size(), patience));
  auto first = b->receive(make_tag(channel::residual, 0, 1), exact, patience);  // taken in time
  BOOST_REQUIRE_MESSAGE(first, test::error_text(first));
  std::this_thread::sleep_for(1s);
  BOOST_TEST(!b->receive(make_tag(channel::residual, 0, 2), exact, 200ms), "a message kept past its time");
  BOOST_REQUIRE(a->send(*id, make_tag(channel::residual, 0, 3), bytes.data(), bytes.size(), patience));
  auto after = b->receive(make_tag(channel::residual, 0, 3), exact, patience);
  BOOST_REQUIRE_MESSAGE(after, test::error_text(after));
  BOOST_TEST((after->bytes == bytes));
}

// A peer process that takes nothing (stopped) does hold a send up: at the send's timeout
// its link closes, dropping the send (UCX cannot cancel one), and once the process runs
// again the next send opens a new link to it.
BOOST_AUTO_TEST_CASE(a_send_to_a_stopped_process_closes_its_link_at_its_timeout_and_the_next_send_reopens_it) {
  auto p = start_echo_peer();
  const auto small = test::byte_pattern(16, 5);
  auto up = p.echo(make_tag(channel::residual, 0, 1), small, patience);  // the link is up
  BOOST_REQUIRE_MESSAGE(up, test::error_text(up));

  p.child->stop();
  const auto large = test::byte_pattern(size_t{8} << 20, 6);
  const auto timeout = 500ms;
  BOOST_REQUIRE(p.self->send(p.peer, make_tag(channel::residual, 0, 2), large.data(), large.size(), timeout));
  std::this_thread::sleep_for(timeout + 1s);  // past its timeout: the link is closed
  p.child->resume();

  auto back = p.echo(make_tag(channel::residual, 0, 3), small, patience);
  BOOST_REQUIRE_MESSAGE(back, test::error_text(back));
  BOOST_TEST((back->bytes == small));
  BOOST_TEST(!p.self->receive(make_tag(channel::residual, 0, 2), exact, 1s), "the stalled send went through");
}

// Two peers that each send a rendezvous-sized message before they receive both get
// theirs: sends never wait for the receiver.
BOOST_AUTO_TEST_CASE(peers_that_send_before_they_receive_do_not_wait_on_each_other) {
  auto a = make_endpoint();
  auto b = make_endpoint();
  auto to_b = a->connect(b->address());
  auto to_a = b->connect(a->address());
  BOOST_REQUIRE(to_b);
  BOOST_REQUIRE(to_a);
  const auto from_a = test::byte_pattern(size_t{4} << 20, 4), from_b = test::byte_pattern(size_t{4} << 20, 5);
  BOOST_REQUIRE(a->send(*to_b, make_tag(channel::residual, 0, 1), from_a.data(), from_a.size(), patience));
  BOOST_REQUIRE(b->send(*to_a, make_tag(channel::residual, 1, 1), from_b.data(), from_b.size(), patience));
  auto at_b = b->receive(make_tag(channel::residual, 0, 1), exact, patience);
  auto at_a = a->receive(make_tag(channel::residual, 1, 1), exact, patience);
  BOOST_REQUIRE_MESSAGE(at_b, test::error_text(at_b));
  BOOST_REQUIRE_MESSAGE(at_a, test::error_text(at_a));
  BOOST_TEST((at_b->bytes == from_a));
  BOOST_TEST((at_a->bytes == from_b));
}

// A receive that times out while its message is arriving leaves the message to the next
// receive of its tag, whole (an expert server polls with short receives, and a loaded host
// can take longer than one to move a large request: it used to be dropped).
BOOST_AUTO_TEST_CASE(a_message_still_arriving_at_a_receive_timeout_goes_to_the_next_receive) {
  auto a = make_endpoint();
  auto b = make_endpoint();
  auto to_a = b->connect(a->address());
  BOOST_REQUIRE_MESSAGE(to_a, test::error_text(to_a));
  const auto large = test::byte_pattern(size_t{64} << 20, 6), small = test::byte_pattern(16, 7);
  // A test thread descheduled between the receives can find the large one arrived whole:
  // then it tries again.
  bool seen_arriving = false;
  for (uint64_t attempt = 1; attempt <= 5 && !seen_arriving; ++attempt) {
    const uint64_t large_tag = make_tag(channel::residual, 1, 2 * attempt),
                   small_tag = make_tag(channel::residual, 1, 2 * attempt + 1);
    BOOST_REQUIRE(b->send(*to_a, large_tag, large.data(), large.size(), patience));
    BOOST_REQUIRE(b->send(*to_a, small_tag, small.data(), small.size(), patience));
    // The small one came after the large one's announcement on the same link.
    auto first = a->receive(small_tag, exact, patience);
    BOOST_REQUIRE_MESSAGE(first, test::error_text(first));

    auto cut_short = a->receive(large_tag, exact, 1ms);  // 64 MiB take far longer than this
    if (cut_short) {
      BOOST_TEST((cut_short->bytes == large));
      continue;
    }
    seen_arriving = true;
    BOOST_TEST(cut_short.err().message.find("still arriving") != std::string::npos, cut_short.err().message);
    auto other = a->receive(small_tag, exact, 100ms);
    BOOST_TEST(!other, "a receive of another tag took the arriving message");
    auto whole = a->receive(large_tag, exact, patience);
    BOOST_REQUIRE_MESSAGE(whole, test::error_text(whole));
    BOOST_TEST(whole->tag == large_tag);
    BOOST_TEST((whole->bytes == large));
  }
  BOOST_TEST(seen_arriving, "in 5 tries, 64 MiB arrived whole within 1 ms each time");
}

BOOST_AUTO_TEST_CASE(a_peer_process_echoes_every_size) {
  auto p = start_echo_peer();
  uint32_t seed = 1;
  for (size_t size : {size_t{0}, size_t{1}, size_t{4096}, size_t{8} << 20}) {
    const uint64_t tag = make_tag(channel::moe_dispatch, 0, seed);
    const auto bytes = test::byte_pattern(size, seed++);
    auto back = p.echo(tag, bytes, patience);
    BOOST_REQUIRE_MESSAGE(back, "size " << size << ": " << test::error_text(back));
    BOOST_TEST(back->tag == tag);
    BOOST_TEST((back->bytes == bytes), "size " << size << " changed on the way");
  }
  const status quit = p.self->send(p.peer, test::echo_quit_tag, nullptr, 0, patience);
  BOOST_REQUIRE_MESSAGE(quit, test::error_text(quit));
  auto exit_status = p.child->wait(patience);
  BOOST_REQUIRE(exit_status);
  BOOST_TEST((WIFEXITED(*exit_status) && WEXITSTATUS(*exit_status) == 0));
}

// Exchanges of 8 MiB run on a thread while the peer is killed: the one in flight fails
// (a send at once, when UCX sees the connection reset; a receive after its timeout), and
// every later send to the peer fails too.
BOOST_AUTO_TEST_CASE(a_peer_process_killed_mid_exchange_fails_sends_and_receives_in_time) {
  auto p = start_echo_peer();
  const auto timeout = 5s;
  const auto bytes = test::byte_pattern(size_t{8} << 20, 3);
  std::atomic<int> exchanges = 0;
  std::string failure;
  std::chrono::steady_clock::time_point failed_at;
  std::thread exchanger([&] {
    for (uint64_t step = 0;; ++step) {
      auto back = p.echo(make_tag(channel::moe_dispatch, 0, step), bytes, timeout);
      if (!back) {
        failure = back.err().message;
        break;
      }
      ++exchanges;
    }
    failed_at = std::chrono::steady_clock::now();
  });
  const bool exchanging = test::eventually([&] { return exchanges >= 2; }, patience);
  p.child->kill();
  const auto killed_at = std::chrono::steady_clock::now();
  exchanger.join();
  BOOST_REQUIRE(exchanging);
  BOOST_TEST((failed_at - killed_at < timeout + 5s));
  BOOST_TEST_MESSAGE("failed " << std::chrono::duration_cast<std::chrono::milliseconds>(failed_at - killed_at).count()
                               << " ms after the kill: " << failure);

  const auto start = std::chrono::steady_clock::now();
  const status s = p.self->send(p.peer, make_tag(channel::moe_dispatch, 0, 0), bytes.data(), bytes.size(), timeout);
  BOOST_TEST(!s);
  BOOST_TEST((std::chrono::steady_clock::now() - start < timeout + 5s));
  BOOST_TEST_MESSAGE("then: " << test::error_text(s));
}

// A link reset under a live peer (UCX gives up on a link under load, a connection is
// reset) fails, and the next send opens a new one at once: a reply dropped meanwhile would
// leave its asker waiting for its step's timeout. The reset is ss -K's, which needs root.
BOOST_AUTO_TEST_CASE(a_link_reset_under_a_live_peer_is_opened_again_by_the_next_send) {
  if (geteuid() != 0) {
    BOOST_TEST_MESSAGE("skipped: resetting a connection (ss -K) needs root");
    return;
  }
  auto a = make_endpoint();
  auto b = make_endpoint();
  auto to_b = a->connect(b->address());
  auto to_a = b->connect(a->address());
  BOOST_REQUIRE(to_b);
  BOOST_REQUIRE(to_a);
  const auto bytes = test::byte_pattern(4096, 8);
  BOOST_REQUIRE(a->send(*to_b, make_tag(channel::residual, 0, 1), bytes.data(), bytes.size(), patience));
  BOOST_REQUIRE(b->receive(make_tag(channel::residual, 0, 1), exact, patience));
  std::this_thread::sleep_for(1100ms);  // the link has been up a while

  // Every TCP connection of this process: a's and b's ends of their link.
  const std::string reset = "ss -tnpH state established | grep 'pid=" + std::to_string(getpid()) +
                            ",' | awk '{print $3}' | xargs -r -I{} ss -K -tn src {} > /dev/null 2>&1";
  BOOST_REQUIRE(std::system(reset.c_str()) == 0);
  const bool seen = test::eventually(
      [&] {
        auto r = a->receive_from(*to_b, make_tag(channel::moe_combine, 1, 1), exact, 10ms);
        return !r && r.err().message.find("down") != std::string::npos;
      },
      patience);
  BOOST_REQUIRE_MESSAGE(seen, "a never saw its link reset");

  const status sent = a->send(*to_b, make_tag(channel::residual, 0, 2), bytes.data(), bytes.size(), patience);
  BOOST_REQUIRE_MESSAGE(sent, "the send after the reset: " << test::error_text(sent));
  auto m = b->receive(make_tag(channel::residual, 0, 2), exact, patience);
  BOOST_REQUIRE_MESSAGE(m, test::error_text(m));
  BOOST_TEST((m->bytes == bytes));
}

// A peer's process started again listens at a new address: repoint moves the peer id
// there, so whoever holds the id reaches the new process; the old address is free again.
BOOST_AUTO_TEST_CASE(repoint_moves_a_peer_id_to_a_restarted_process) {
  auto a = make_endpoint();
  auto old_b = make_endpoint();
  auto id = a->connect(old_b->address());
  BOOST_REQUIRE_MESSAGE(id, test::error_text(id));
  old_b.reset();  // its process died
  auto new_b = make_endpoint();
  const status moved = a->repoint(*id, new_b->address());
  BOOST_REQUIRE_MESSAGE(moved, test::error_text(moved));
  const auto bytes = test::byte_pattern(4096, 7);
  const status sent = a->send(*id, make_tag(channel::residual, 0, 1), bytes.data(), bytes.size(), patience);
  BOOST_REQUIRE_MESSAGE(sent, test::error_text(sent));
  auto m = new_b->receive(make_tag(channel::residual, 0, 1), exact, patience);
  BOOST_REQUIRE_MESSAGE(m, test::error_text(m));
  BOOST_TEST((m->bytes == bytes));
  auto same = a->connect(new_b->address());
  BOOST_REQUIRE_MESSAGE(same, test::error_text(same));
  BOOST_TEST(*same == *id, "the new address is the moved peer's");
  auto other = make_endpoint();
  auto second = a->connect(other->address());
  BOOST_REQUIRE_MESSAGE(second, test::error_text(second));
  BOOST_TEST(!a->repoint(*second, new_b->address()), "two peers at one address");
  BOOST_TEST(!a->repoint(99, other->address()), "a peer id never handed out");
}

// A node that is down when this one starts has no address: its absent peer id fails sends
// and replies at once (a second later too, when sends of a failed link reopen it), and
// repoint gives it the address of the node's new process.
BOOST_AUTO_TEST_CASE(an_absent_peer_fails_at_once_until_repointed) {
  auto a = make_endpoint();
  auto id = a->absent_peer();
  BOOST_REQUIRE_MESSAGE(id, test::error_text(id));
  const auto bytes = test::byte_pattern(256, 3);
  BOOST_TEST(!a->send(*id, make_tag(channel::residual, 0, 1), bytes.data(), bytes.size(), patience));
  std::this_thread::sleep_for(1100ms);
  const status again = a->send(*id, make_tag(channel::residual, 0, 1), bytes.data(), bytes.size(), patience);
  BOOST_TEST(!again);
  BOOST_TEST(test::error_text(again).find("no address") != std::string::npos, test::error_text(again));
  const auto started = std::chrono::steady_clock::now();
  BOOST_TEST(!a->receive_from(*id, make_tag(channel::moe_combine, 0, 1), exact, 30s));
  BOOST_TEST((std::chrono::steady_clock::now() - started < 5s), "a reply from an absent peer waited its timeout");
  auto other = a->absent_peer();
  BOOST_REQUIRE_MESSAGE(other, test::error_text(other));
  BOOST_TEST(*other != *id, "each absent node has its own id");

  auto b = make_endpoint();
  const status moved = a->repoint(*id, b->address());
  BOOST_REQUIRE_MESSAGE(moved, test::error_text(moved));
  const status sent = a->send(*id, make_tag(channel::residual, 0, 2), bytes.data(), bytes.size(), patience);
  BOOST_REQUIRE_MESSAGE(sent, test::error_text(sent));
  auto m = b->receive(make_tag(channel::residual, 0, 2), exact, patience);
  BOOST_REQUIRE_MESSAGE(m, test::error_text(m));
  BOOST_TEST((m->bytes == bytes));
  auto same = a->connect(b->address());
  BOOST_REQUIRE_MESSAGE(same, test::error_text(same));
  BOOST_TEST(*same == *id, "the repointed id is the address's");
}

// A reply awaited from one peer whose process dies: receive_from fails when UCX sees the
// connection go, long before its timeout; a receive from any peer would wait it out.
BOOST_AUTO_TEST_CASE(receive_from_a_peer_killed_meanwhile_fails_at_once) {
  auto p = start_echo_peer();
  const auto bytes = test::byte_pattern(64, 4);
  auto back = p.echo(make_tag(channel::moe_dispatch, 0, 1), bytes, patience);  // the link is up
  BOOST_REQUIRE_MESSAGE(back, test::error_text(back));
  const auto timeout = 60s;
  std::chrono::steady_clock::time_point ended;
  result<transport::message> reply = error{"not yet"};
  std::thread waiter([&] {
    reply = p.self->receive_from(p.peer, make_tag(channel::moe_combine, 0, 99), exact, timeout);
    ended = std::chrono::steady_clock::now();
  });
  std::this_thread::sleep_for(200ms);
  p.child->kill();
  const auto killed = std::chrono::steady_clock::now();
  waiter.join();
  BOOST_TEST(!reply);
  BOOST_TEST((ended - killed < 10s),
             "it waited " << std::chrono::duration_cast<std::chrono::milliseconds>(ended - killed).count()
                          << " ms: " << test::error_text(reply));
}

// A reply awaited from a peer whose process was started again and repointed meanwhile
// (the head does so before the old one's death shows on the link): the new process owes
// nothing, so receive_from fails at the repoint rather than at its timeout. The chaos
// drills' packet loss saw a stage wait out a 30 s step so.
BOOST_AUTO_TEST_CASE(receive_from_a_peer_repointed_meanwhile_fails_at_once) {
  auto a = make_endpoint();
  auto old_b = make_endpoint();
  auto id = a->connect(old_b->address());
  BOOST_REQUIRE_MESSAGE(id, test::error_text(id));
  auto new_b = make_endpoint();
  std::chrono::steady_clock::time_point ended;
  result<transport::message> reply = error{"not yet"};
  std::thread waiter([&] {
    reply = a->receive_from(*id, make_tag(channel::moe_combine, 0, 7), exact, 60s);
    ended = std::chrono::steady_clock::now();
  });
  std::this_thread::sleep_for(200ms);
  const auto moved_at = std::chrono::steady_clock::now();
  const status moved = a->repoint(*id, new_b->address());
  BOOST_REQUIRE_MESSAGE(moved, test::error_text(moved));
  waiter.join();
  BOOST_REQUIRE(!reply);
  BOOST_TEST(reply.err().message ==
             "UCX peer " + std::to_string(*id) + "'s process was started again while its reply was awaited");
  BOOST_TEST((ended - moved_at < 5s));
  // A reply the new process sends is taken as ever.
  const auto bytes = test::byte_pattern(64, 9);
  auto back = new_b->connect(a->address());
  BOOST_REQUIRE_MESSAGE(back, test::error_text(back));
  const status sent = new_b->send(*back, make_tag(channel::moe_combine, 0, 8), bytes.data(), bytes.size(), patience);
  BOOST_REQUIRE_MESSAGE(sent, test::error_text(sent));
  auto next = a->receive_from(*id, make_tag(channel::moe_combine, 0, 8), exact, patience);
  BOOST_REQUIRE_MESSAGE(next, test::error_text(next));
  BOOST_TEST((next->bytes == bytes));
}

// The chaos drills' cluster: the test process is the head (node 0), node 1 is restarted
// again and again (killed, or stopped as a hung one and then killed, as the head does),
// node 2 stays. All exchange with all, as stages and expert groups do. The link between the
// head and node 2 is no business of node 1's: no exchange over it fails or waits (the
// drills saw node 2's link to the head reset when node 1 was restarted).
BOOST_AUTO_TEST_CASE(restarting_one_node_never_disturbs_the_link_between_the_other_two) {
  auto head = make_endpoint();
  node_process third;
  auto second = std::make_unique<node_process>();
  std::vector<std::vector<uint8_t>> addresses{head->address(), second->address, third.address};
  std::mutex peers_mutex;
  std::vector<int> peers;
  for (const auto& a : addresses) {
    auto id = head->connect(a);
    BOOST_REQUIRE_MESSAGE(id, test::error_text(id));
    peers.push_back(*id);
  }
  const test::node_peers peer_of = [&](int node) {
    std::lock_guard lock(peers_mutex);
    return peers[size_t(node)];
  };
  third.command(peers_command(2, addresses));
  second->command(peers_command(1, addresses));

  std::atomic<bool> driving = true, stop_serving = false;
  std::atomic<uint64_t> next_sequence = 1;  // one counter, as remote_experts: no two exchanges await one tag
  std::mutex failures_mutex;
  std::vector<std::string> head_failures;
  std::atomic<int64_t> longest_ms = 0, exchanges = 0;
  std::thread server([&] {
    test::serve_requests(*head, peer_of, stop_serving, [&](const std::string& what) {
      std::lock_guard lock(failures_mutex);
      if (what.starts_with("reply to node 2")) head_failures.push_back(what);
    });
  });
  std::thread to_third([&] {
    while (driving) {
      const uint64_t sequence = next_sequence++;
      const auto start = std::chrono::steady_clock::now();
      const status s = test::exchange(*head, peer_of(2), 0, sequence, sequence % 2 ? 4096 : 65536, patience);
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
      longest_ms = std::max(longest_ms.load(), int64_t(ms.count()));
      ++exchanges;
      if (!s) {
        std::lock_guard lock(failures_mutex);
        head_failures.push_back("exchange with node 2: " + s.err().message);
      }
    }
  });
  std::thread to_second([&] {
    while (driving) {
      const uint64_t sequence = next_sequence++;
      if (!test::exchange(*head, peer_of(1), 0, sequence, sequence % 2 ? 4096 : 65536, 2s))
        std::this_thread::sleep_for(100ms);  // it is down, or hung
    }
  });
  third.command("drive 0");
  third.command("drive 1");
  second->command("drive 0");
  second->command("drive 2");

  constexpr int restarts = 8;
  for (int round = 0; round < restarts; ++round) {
    std::this_thread::sleep_for(500ms);
    if (round % 2) {
      second->child->stop();
      std::this_thread::sleep_for(2500ms);  // the progress timeout that finds it hung
    }
    second->child->kill();
    BOOST_REQUIRE(second->child->wait(patience));
    second = std::make_unique<node_process>();
    addresses[1] = second->address;
    const status moved = head->repoint(peer_of(1), second->address);
    BOOST_REQUIRE_MESSAGE(moved, test::error_text(moved));
    third.command("repoint 1 " + test::to_hex(second->address));
    second->command(peers_command(1, addresses));
    second->command("drive 0");
    second->command("drive 2");
  }
  std::this_thread::sleep_for(1s);
  // The exchanges end before anyone stops serving, so none waits on a node that stopped.
  driving = false;
  to_third.join();
  to_second.join();
  third.command("halt");
  second->command("halt");
  stop_serving = true;
  server.join();
  third.read_failures(200ms);

  BOOST_TEST_MESSAGE(exchanges << " exchanges between the head and node 2, the longest " << longest_ms << " ms");
  for (const auto& f : head_failures) BOOST_TEST_ERROR("the head: " << f);
  for (const auto& f : third.failures)
    if (f.find("node 0") != std::string::npos) BOOST_TEST_ERROR("node 2: " << f);
  BOOST_TEST(longest_ms < 2000, "an exchange between the head and node 2 waited " << longest_ms << " ms");
}

// A peer that stops reading now and then (its process stopped, as a congested link or a
// hung node looks from here) while both ends exchange from several threads, rendezvous
// sizes among them: sends time out, their links are closed by force with transfers in
// flight both ways (receives too) and opened again by the next send, again and again. None
// of it may crash, and once the peer reads again the link works.
BOOST_AUTO_TEST_CASE(closing_stalled_links_with_transfers_in_flight_is_safe) {
  auto head = make_endpoint();
  node_process peer;
  const std::vector<std::vector<uint8_t>> addresses{head->address(), peer.address};
  std::vector<int> peers;
  for (const auto& a : addresses) {
    auto id = head->connect(a);
    BOOST_REQUIRE_MESSAGE(id, test::error_text(id));
    peers.push_back(*id);
  }
  const test::node_peers peer_of = [&](int node) { return peers[size_t(node)]; };
  peer.command(peers_command(1, addresses));

  std::atomic<bool> stop = false;
  std::thread server([&] { test::serve_requests(*head, peer_of, stop, [](const std::string&) {}); });
  std::vector<std::thread> senders;
  for (uint16_t thread = 0; thread < 3; ++thread)
    senders.emplace_back([&, thread] {
      for (uint64_t sequence = uint64_t(thread) << 32; !stop; ++sequence)
        (void)test::exchange(*head, peer_of(1), 0, sequence, sequence % 2 ? 65536 : size_t{1} << 20, 300ms);
    });
  peer.command("drive 0");
  std::this_thread::sleep_for(300ms);
  node_process bystander;
  for (int round = 0; round < 10; ++round) {
    peer.child->stop();
    std::this_thread::sleep_for(1s);
    peer.child->resume();
    std::this_thread::sleep_for(300ms);
  }
  stop = true;
  for (auto& s : senders) s.join();
  server.join();

  std::this_thread::sleep_for(1500ms);  // past the wait after a failed link
  const status s = test::exchange(*head, peer_of(1), 0, uint64_t{1} << 40 >> 1, 4096, patience);
  BOOST_TEST(s.ok(), "the link did not come back: " << test::error_text(s));
}
