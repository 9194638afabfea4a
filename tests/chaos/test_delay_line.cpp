// chaos::delay_line between two datagram socket pairs: every frame crosses whole, each way,
// none before `delay - jitter`, and the times it is held vary within the jitter. Frames
// still in flight when the line stops are dropped, not delivered.
#define BOOST_TEST_MODULE delay_line
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "chaos/delay_line.hpp"

using namespace troupe;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

struct socket_pair {
  int outer = -1, inner = -1;  // the test holds the outer end; the line the inner
  socket_pair() {
    int fds[2];
    BOOST_REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds) == 0);
    outer = fds[0];
    inner = fds[1];
  }
  ~socket_pair() {
    close(outer);
    close(inner);
  }
};

// Frame i: its number, then bytes up to its size, so that a cut or mixed frame shows.
std::string frame(int i, size_t size) {
  std::string f = std::to_string(i) + ":";
  while (f.size() < size) f.push_back(char('a' + (i + f.size()) % 26));
  return f;
}

struct arrival {
  std::string frame;
  int end;  // 0: a's outer end, 1: b's
  clock_type::time_point at;
};

// Reads frames from both outer ends as they come, until `count` came or `limit` passed.
std::vector<arrival> receive(int end_a, int end_b, size_t count, std::chrono::milliseconds limit) {
  std::vector<arrival> got;
  const auto end = clock_type::now() + limit;
  std::vector<char> buffer(1 << 17);
  while (got.size() < count && clock_type::now() < end) {
    pollfd p[2] = {{end_a, POLLIN, 0}, {end_b, POLLIN, 0}};
    if (poll(p, 2, 10) <= 0) continue;
    for (int e = 0; e < 2; ++e) {
      if ((p[e].revents & POLLIN) == 0) continue;
      const ssize_t n = read(p[e].fd, buffer.data(), buffer.size());
      if (n > 0) got.push_back({std::string(buffer.data(), size_t(n)), e, clock_type::now()});
    }
  }
  return got;
}

}  // namespace

BOOST_AUTO_TEST_CASE(frames_cross_whole_each_way_held_within_delay_and_jitter) {
  socket_pair a, b;
  chaos::delay_line line(a.inner, b.inner, {30ms, 10ms}, 7);
  constexpr int frames = 60;
  std::map<std::string, clock_type::time_point> sent;
  // Read as they come, while the frames are sent (1 ms apart), so that their times are the line's.
  auto arrivals = std::async(std::launch::async, [&] { return receive(a.outer, b.outer, frames, 5000ms); });
  for (int i = 0; i < frames; ++i) {
    // Sizes up to a 64 KiB GSO frame; even frames one way, odd ones the other.
    const std::string f = frame(i, 16 + size_t(i) * 1093);
    sent[f] = clock_type::now();
    BOOST_REQUIRE(write(i % 2 == 0 ? a.outer : b.outer, f.data(), f.size()) == ssize_t(f.size()));
    std::this_thread::sleep_for(1ms);
  }
  const std::vector<arrival> got = arrivals.get();
  BOOST_TEST(got.size() == size_t(frames));
  std::vector<double> held_ms;
  bool overtaken = false;
  int last[2] = {-1, -1};
  for (const auto& [f, end, when] : got) {
    auto s = sent.find(f);
    BOOST_REQUIRE_MESSAGE(s != sent.end(), "a frame that was not sent, or was cut: " << f.substr(0, 12));
    const int i = std::stoi(f);
    BOOST_TEST((i % 2 == 0) == (end == 1), "frame " << i << " came out of the end it went in");
    const double ms = std::chrono::duration<double, std::milli>(when - s->second).count();
    BOOST_TEST(ms >= 20.0, "frame " << i << " held " << ms << " ms, less than delay - jitter");
    held_ms.push_back(ms);
    overtaken |= i < last[end];
    last[end] = i;
    sent.erase(s);
  }
  BOOST_TEST(sent.empty(), sent.size() << " frames did not cross");
  // Held 30 +- 10 ms at random: frames 2 ms apart overtake each other, and the times spread.
  std::sort(held_ms.begin(), held_ms.end());
  BOOST_TEST(held_ms.back() - held_ms.front() > 10.0, "held " << held_ms.front() << " to " << held_ms.back() << " ms");
  // Bounded loosely above: a scheduler's stall on a busy machine is not the line's.
  BOOST_TEST(held_ms[held_ms.size() / 2] < 100.0, "held " << held_ms[held_ms.size() / 2] << " ms at the median");
  BOOST_TEST(overtaken, "no frame overtook another under a jitter five times their spacing");
}

BOOST_AUTO_TEST_CASE(no_jitter_keeps_order) {
  socket_pair a, b;
  chaos::delay_line line(a.inner, b.inner, {5ms, 0ms}, 1);
  for (int i = 0; i < 50; ++i) BOOST_REQUIRE(write(a.outer, frame(i, 100).data(), 100) == 100);
  auto got = receive(a.outer, b.outer, 50, 5000ms);
  BOOST_REQUIRE(got.size() == 50u);
  for (int i = 0; i < 50; ++i) BOOST_TEST((got[size_t(i)].frame == frame(i, 100) && got[size_t(i)].end == 1));
}

BOOST_AUTO_TEST_CASE(frames_in_flight_when_it_stops_are_dropped) {
  socket_pair a, b;
  {
    chaos::delay_line line(a.inner, b.inner, {2000ms, 0ms}, 1);
    BOOST_REQUIRE(write(a.outer, "late", 4) == 4);
    std::this_thread::sleep_for(50ms);  // read by the line, held
  }
  BOOST_TEST(receive(a.outer, b.outer, 1, 300ms).empty());
}
