// The transports' contract, one table over every kind: round trips of every size, masked
// and out-of-order receives, many threads at once, timeouts, and a peer that goes away.
// Timeouts are generous: a loaded 2-core CI machine may stall a thread for seconds.
#define BOOST_TEST_MODULE transport
#include <boost/test/unit_test.hpp>

#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>

#include "tests/support/error_text.hpp"
#include "tests/transport/byte_pattern.hpp"
#include "tests/transport/transport_kinds.hpp"
#include "transport/in_process_transport.hpp"
#include "transport/tags.hpp"
#include "transport/ucx_transport.hpp"

using namespace troupe;
using namespace std::chrono_literals;

using kinds = test::transport_kinds;

namespace {

constexpr auto patience = 20s;
constexpr uint64_t exact = ~uint64_t{0};

// Two endpoints of one kind, each connected to the other.
template <class Kind>
struct endpoint_pair {
  endpoint_pair() {
    auto ab = a->connect(b->address());
    auto ba = b->connect(a->address());
    BOOST_REQUIRE_MESSAGE(ab, test::error_text(ab));
    BOOST_REQUIRE_MESSAGE(ba, test::error_text(ba));
    a_to_b = *ab;
    b_to_a = *ba;
  }
  Kind kind;
  std::unique_ptr<transport> a = kind.make(), b = kind.make();
  int a_to_b = -1, b_to_a = -1;
};

// `bytes` from `from` to `to`, sent on another thread: a large UCX send returns only once
// the receiver has taken it.
transport::message pass(transport& from, int peer, uint64_t tag, const std::vector<uint8_t>& bytes, transport& to) {
  auto sent =
      std::async(std::launch::async, [&] { return from.send(peer, tag, bytes.data(), bytes.size(), patience); });
  auto got = to.receive(tag, exact, patience);
  const status s = sent.get();
  BOOST_REQUIRE_MESSAGE(s, test::error_text(s));
  BOOST_REQUIRE_MESSAGE(got, test::error_text(got));
  return std::move(got).value();
}

void send_now(transport& from, int peer, uint64_t tag, const std::vector<uint8_t>& bytes) {
  const status s = from.send(peer, tag, bytes.data(), bytes.size(), patience);
  BOOST_REQUIRE_MESSAGE(s, test::error_text(s));
}

// The next message under (tag, mask) is `wanted`, with the bytes sent under it.
void expect_next(transport& t, uint64_t tag, uint64_t mask, uint64_t wanted) {
  auto m = t.receive(tag, mask, patience);
  BOOST_REQUIRE_MESSAGE(m, test::error_text(m));
  BOOST_TEST(m->tag == wanted);
  BOOST_TEST((m->bytes == test::byte_pattern(64, uint32_t(wanted))));
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_tag_keeps_its_channel_sender_and_sequence) {
  const uint64_t t = make_tag(channel::moe_combine, 0xbeef, 0x12'3456'789a);
  BOOST_TEST((tag_channel(t) == channel::moe_combine));
  BOOST_TEST(tag_sender(t) == 0xbeef);
  BOOST_TEST(tag_sequence(t) == 0x12'3456'789aull);
  BOOST_TEST((channel_mask | sender_mask | sequence_mask) == exact);
  BOOST_TEST((channel_mask & sender_mask) == 0u);
  BOOST_TEST((sender_mask & sequence_mask) == 0u);
  BOOST_TEST(tag_sequence(make_tag(channel::residual, 1, sequence_mask + 5)) == 4u);  // wraps
}

BOOST_AUTO_TEST_CASE_TEMPLATE(round_trips_of_every_size, Kind, kinds) {
  endpoint_pair<Kind> p;
  uint32_t seed = 1;
  for (size_t size : {size_t{0}, size_t{1}, size_t{4096}, size_t{8} << 20}) {
    const uint64_t tag = make_tag(channel::residual, 1, seed);
    const auto bytes = test::byte_pattern(size, seed++);
    const auto there = pass(*p.a, p.a_to_b, tag, bytes, *p.b);
    BOOST_TEST(there.tag == tag);
    BOOST_TEST((there.bytes == bytes), "size " << size << " changed on the way there");
    const auto back = pass(*p.b, p.b_to_a, tag, there.bytes, *p.a);
    BOOST_TEST((back.bytes == bytes), "size " << size << " changed on the way back");
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_masked_receive_picks_its_tag_among_those_pending, Kind, kinds) {
  endpoint_pair<Kind> p;
  const uint64_t residual = make_tag(channel::residual, 1, 7);
  const uint64_t dispatch_1 = make_tag(channel::moe_dispatch, 1, 7);
  const uint64_t dispatch_2 = make_tag(channel::moe_dispatch, 2, 7);
  const uint64_t combine = make_tag(channel::moe_combine, 2, 8);
  for (uint64_t tag : {residual, dispatch_1, dispatch_2, combine})
    send_now(*p.a, p.a_to_b, tag, test::byte_pattern(64, uint32_t(tag)));

  expect_next(*p.b, make_tag(channel::moe_combine, 0, 0), channel_mask, combine);
  expect_next(*p.b, make_tag(channel::moe_dispatch, 2, 0), channel_mask | sender_mask, dispatch_2);
  expect_next(*p.b, make_tag(channel::residual, 0, 7), channel_mask | sequence_mask, residual);
  expect_next(*p.b, 0, 0, dispatch_1);  // the one left
}

BOOST_AUTO_TEST_CASE_TEMPLATE(messages_are_received_in_any_order, Kind, kinds) {
  endpoint_pair<Kind> p;
  for (uint64_t step : {3, 2, 1})
    send_now(*p.a, p.a_to_b, make_tag(channel::residual, 0, step), test::byte_pattern(256, uint32_t(step)));
  for (uint64_t step : {1, 2, 3}) {
    auto m = p.b->receive(make_tag(channel::residual, 0, step), exact, patience);
    BOOST_REQUIRE_MESSAGE(m, test::error_text(m));
    BOOST_TEST((m->bytes == test::byte_pattern(256, uint32_t(step))));
  }
}

// Four threads on each side send to the other side while four more receive, each its own
// sender's messages (small, and rendezvous-sized for UCX).
BOOST_AUTO_TEST_CASE_TEMPLATE(many_threads_send_and_receive_at_once, Kind, kinds) {
  endpoint_pair<Kind> p;
  constexpr int threads = 4, messages = 40;
  const auto size_of = [](int j) { return j % 4 == 0 ? size_t{256} << 10 : size_t(j) * 17; };
  std::mutex mutex;
  std::vector<std::string> failures;
  const auto fail = [&](const char* what, const std::string& why) {
    std::lock_guard lock(mutex);
    failures.push_back(std::string(what) + ": " + why);
  };
  std::vector<std::thread> all;
  for (auto [from, to, peer] :
       {std::tuple{p.a.get(), p.b.get(), p.a_to_b}, std::tuple{p.b.get(), p.a.get(), p.b_to_a}}) {
    for (int i = 0; i < threads; ++i) {
      all.emplace_back([&, from, peer, i] {
        for (int j = 0; j < messages; ++j) {
          const auto bytes = test::byte_pattern(size_of(j), uint32_t(i * messages + j));
          if (auto s = from->send(peer, make_tag(channel::moe_dispatch, uint16_t(i), uint64_t(j)), bytes.data(),
                                  bytes.size(), patience);
              !s)
            return fail("send", s.err().message);
        }
      });
      all.emplace_back([&, to, i] {
        for (int j = 0; j < messages; ++j) {
          auto m = to->receive(make_tag(channel::moe_dispatch, uint16_t(i), uint64_t(j)), exact, patience);
          if (!m) return fail("receive", m.err().message);
          if (m->bytes != test::byte_pattern(size_of(j), uint32_t(i * messages + j)))
            return fail("receive", "changed bytes");
        }
      });
    }
  }
  for (auto& t : all) t.join();
  BOOST_TEST(failures.empty(), (failures.empty() ? std::string() : failures.front()));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_receive_with_nothing_sent_times_out, Kind, kinds) {
  endpoint_pair<Kind> p;
  const auto timeout = 300ms;
  const auto start = std::chrono::steady_clock::now();
  auto m = p.b->receive(make_tag(channel::residual, 0, 1), exact, timeout);
  const auto waited = std::chrono::steady_clock::now() - start;
  BOOST_TEST(!m);
  BOOST_TEST((waited >= timeout));
  BOOST_TEST((waited < timeout + 5s));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(connecting_twice_gives_one_peer, Kind, kinds) {
  endpoint_pair<Kind> p;
  auto again = p.a->connect(p.b->address());
  BOOST_REQUIRE_MESSAGE(again, test::error_text(again));
  BOOST_TEST(*again == p.a_to_b);
  BOOST_TEST(!p.a->connect({}));
  const uint8_t byte = 1;
  BOOST_TEST(!p.a->send(p.a_to_b + 100, 0, &byte, 1, patience));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(an_endpoint_reaches_itself, Kind, kinds) {
  Kind kind;
  auto a = kind.make();
  auto self = a->connect(a->address());
  BOOST_REQUIRE_MESSAGE(self, test::error_text(self));
  const auto bytes = test::byte_pattern(4096, 5);
  const auto m = pass(*a, *self, make_tag(channel::residual, 0, 1), bytes, *a);
  BOOST_TEST((m.bytes == bytes));
}

// A peer endpoint destroyed: sends to it fail (UCX learns it from the closed connection,
// so a send or two may still leave before it does).
BOOST_AUTO_TEST_CASE_TEMPLATE(sends_to_a_peer_that_is_gone_fail, Kind, kinds) {
  endpoint_pair<Kind> p;
  p.b.reset();
  const auto bytes = test::byte_pattern(64, 1);
  const auto deadline = std::chrono::steady_clock::now() + patience;
  status s = ok();
  while (s && std::chrono::steady_clock::now() < deadline) {
    s = p.a->send(p.a_to_b, 0, bytes.data(), bytes.size(), patience);
    if (s) std::this_thread::sleep_for(50ms);
  }
  BOOST_TEST(!s);
  BOOST_TEST_MESSAGE(test::error_text(s));
}

// An in-process endpoint lives as long as its process, so none is ever started again at
// another address: repointing a peer is refused, and the peer still works.
BOOST_AUTO_TEST_CASE(an_in_process_peer_cannot_be_repointed) {
  test::in_process_kind kind;
  auto a = kind.make();
  auto b = kind.make();
  auto c = kind.make();
  auto id = a->connect(b->address());
  BOOST_REQUIRE_MESSAGE(id, test::error_text(id));
  const status moved = a->repoint(*id, c->address());
  BOOST_TEST(!moved);
  BOOST_TEST(test::error_text(moved).find("cannot move") != std::string::npos, test::error_text(moved));
  const auto bytes = test::byte_pattern(64, 3);
  const auto m = pass(*a, *id, make_tag(channel::residual, 0, 1), bytes, *b);
  BOOST_TEST((m.bytes == bytes));
}
