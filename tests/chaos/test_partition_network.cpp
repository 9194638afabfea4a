// chaos::partition_network's delay (needs root, as CI has: network namespaces, a bridge, a
// tap device): a TCP echo server in a node's namespace, its link delayed 25 +- 10 ms each way.
// Every round trip takes at least 2 x 15 ms and they vary; 2 MiB cross whole both ways (64 KiB
// GSO frames, checksums left to the device); once undelayed, round trips are short again.
#define BOOST_TEST_MODULE partition_network
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/network_namespace.hpp"
#include "chaos/partition_network.hpp"
#include "cluster/cluster_spec.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

const std::string node_namespace = "troupe_test_net_" + std::to_string(getpid());
constexpr const char* node_address = "10.233.0.2";
constexpr uint16_t echo_port = 7007;

cluster_spec two_nodes() {
  const auto file = std::filesystem::temp_directory_path() / ("troupe_partition_" + std::to_string(getpid()) + ".conf");
  std::ofstream(file) << "[cluster]\nsecret = s\ninsecure = yes\n[model]\npath = m\n[gateway]\nnode = head\n"
                      << "[node.head]\naddress = 10.233.0.1\ndevices = cpu\n"
                      << "[node.second]\naddress = " << node_address << "\nport = 0\nnetns = " << node_namespace
                      << "\ndevices = cpu\n[replica.main]\nstages = head:0-1, second:2-3\n";
  auto spec = read_cluster_spec(file);
  std::filesystem::remove(file);
  BOOST_REQUIRE_MESSAGE(spec, (spec ? "" : spec.err().message));
  return std::move(spec).value();
}

// In the node's namespace: echoes one connection back until it ends. Before any thread.
pid_t start_echo_server() {
  const pid_t pid = fork();
  BOOST_REQUIRE(pid >= 0);
  if (pid > 0) return pid;
  if (enter_network_namespace(("/run/netns/" + node_namespace).c_str()) != 0) _exit(2);
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(echo_port);
  inet_pton(AF_INET, node_address, &a.sin_addr);
  if (bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(listener, 1) != 0) _exit(3);
  const int c = accept(listener, nullptr, nullptr);
  const int on = 1;
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  std::vector<char> buffer(1 << 16);
  for (ssize_t n; (n = read(c, buffer.data(), buffer.size())) > 0;)
    for (ssize_t sent = 0; sent < n;) {
      const ssize_t w = write(c, buffer.data() + sent, size_t(n - sent));
      if (w <= 0) _exit(4);
      sent += w;
    }
  _exit(0);
}

int connect_to_echo() {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(echo_port);
  inet_pton(AF_INET, node_address, &a.sin_addr);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int c = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
      const int on = 1;
      setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      timeval limit{20, 0};  // a stalled link fails the test instead of hanging it
      setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
      return c;
    }
    close(c);
    std::this_thread::sleep_for(20ms);
  }
  BOOST_FAIL("the echo server in the node's namespace never answered");
  return -1;
}

// Milliseconds of `count` one-byte round trips.
std::vector<double> round_trips(int c, int count) {
  std::vector<double> ms;
  for (int i = 0; i < count; ++i) {
    char byte = char(i), back = 0;
    const auto start = std::chrono::steady_clock::now();
    BOOST_REQUIRE(write(c, &byte, 1) == 1);
    BOOST_REQUIRE_MESSAGE(read(c, &back, 1) == 1, "no echo within 20 s");
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    BOOST_REQUIRE(back == byte);
  }
  std::sort(ms.begin(), ms.end());
  return ms;
}

// 2 MiB of random bytes out, and back through the echo, in full.
void check_bulk_echo(int c, uint32_t seed) {
  std::vector<char> out(2 << 20), back(out.size());
  std::mt19937 gen(seed);
  for (char& b : out) b = char(gen());
  std::thread writer([&] {
    for (size_t sent = 0; sent < out.size();) {
      const ssize_t w = write(c, out.data() + sent, out.size() - sent);
      if (w <= 0) return;
      sent += size_t(w);
    }
  });
  size_t got = 0;
  for (ssize_t n; got < back.size() && (n = read(c, back.data() + got, back.size() - got)) > 0;) got += size_t(n);
  writer.join();
  BOOST_TEST(got == out.size(), "echoed " << got << " of " << out.size() << " bytes");
  BOOST_TEST((back == out), "the echo differs from what was sent");
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_delayed_link_holds_each_packet_delay_plus_minus_jitter_and_loses_none) {
  BOOST_REQUIRE_MESSAGE(geteuid() == 0, "needs root (network namespaces and a tap device), as CI has");
  const cluster_spec spec = two_nodes();
  auto network = chaos::partition_network::create(spec);
  BOOST_REQUIRE_MESSAGE(network, (network ? "" : network.err().message));
  const pid_t server = start_echo_server();
  const int c = connect_to_echo();

  const auto direct = round_trips(c, 20);
  BOOST_TEST(direct.front() < 30.0, "a direct round trip takes " << direct.front() << " ms at the least");

  BOOST_REQUIRE_MESSAGE((*network)->delay("second", 25ms, 10ms, 1), "delay");
  const auto delayed = round_trips(c, 30);
  BOOST_TEST(delayed.front() >= 30.0, "a round trip of " << delayed.front() << " ms, under 2 x (25 - 10)");
  BOOST_TEST(delayed.back() - delayed.front() > 5.0,
             "round trips from " << delayed.front() << " to " << delayed.back() << " ms: no jitter");
  BOOST_TEST_MESSAGE("round trips, ms: direct " << direct.front() << "-" << direct.back() << ", delayed "
                                                << delayed.front() << "-" << delayed.back() << " (median "
                                                << delayed[delayed.size() / 2] << ")");
  check_bulk_echo(c, 1);
  BOOST_TEST(!(*network)->delay("second", 25ms, 10ms, 1), "a second delay of a delayed link");

  BOOST_REQUIRE_MESSAGE((*network)->undelay("second"), "undelay");
  const auto after = round_trips(c, 20);
  BOOST_TEST(after.front() < 30.0, "undelayed, a round trip takes " << after.front() << " ms at the least");
  check_bulk_echo(c, 2);
  BOOST_TEST(!(*network)->undelay("second"), "an undelay of a link not delayed");
  BOOST_TEST(!(*network)->delay("third", 25ms, 0ms, 1), "a delay of a node in no namespace of the run");

  close(c);
  int status = 0;
  waitpid(server, &status, 0);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0), "the echo server ended with " << status);
}
