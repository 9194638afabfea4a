// A node process of the three-node UCX tests (node_exchange.hpp): it prints its address
// (echo_peer_protocol.hpp), then takes lines on its standard input:
//   peers SELF HEX...  its own node index and every node's address, in node order
//   repoint N HEX      node N was started again at this address
//   drive N            exchange with node N, one request after another, until halted
//   halt               end the exchanges (answered once they have ended); serving goes on
// It answers each with "ok" or "error WHY", serves every dispatch request, and
// prints "failed WHAT" for each reply or exchange that failed. Its exchanges take their
// sequence numbers from one counter, as remote_experts does, so no two await the same tag.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <list>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/transport/echo_peer_protocol.hpp"
#include "tests/transport/keep_unreceived.hpp"
#include "tests/transport/node_exchange.hpp"
#include "transport/ucx_transport.hpp"

using namespace troupe;

namespace {

std::mutex output_mutex;
FILE* output = nullptr;

void say(const std::string& line) {
  std::lock_guard lock(output_mutex);
  std::fprintf(output, "%s\n", line.c_str());
  std::fflush(output);
}

}  // namespace

int main() {
  auto created = ucx_transport::create(test::keep_unreceived);
  if (!created) {
    std::fprintf(stderr, "ucx_node_peer: %s\n", created.err().message.c_str());
    return 1;
  }
  auto& t = **created;
  output = fdopen(dup(1), "w");
  dup2(2, 1);  // UCX logs to standard output; ours stays for our lines
  say(test::address_prefix + test::to_hex(t.address()));

  std::mutex peers_mutex;
  std::vector<int> peers;
  int self = -1;
  const test::node_peers peer_of = [&](int node) {
    std::lock_guard lock(peers_mutex);
    return node >= 0 && size_t(node) < peers.size() ? peers[size_t(node)] : -1;
  };
  std::atomic<bool> stop = false, driving = true;
  std::atomic<uint64_t> next_sequence = 1;
  std::thread server(
      [&] { test::serve_requests(t, peer_of, stop, [](const std::string& what) { say("failed " + what); }); });
  std::list<std::thread> drivers;

  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command;
    words >> command;
    if (command == "peers") {
      words >> self;
      std::vector<int> ids;
      std::string hex;
      std::string failure;
      while (words >> hex)
        if (auto id = t.connect(test::from_hex(hex)); id)
          ids.push_back(*id);
        else
          failure = id.err().message;
      std::lock_guard lock(peers_mutex);
      peers = ids;
      say(failure.empty() ? "ok" : "error " + failure);
    } else if (command == "repoint") {
      int node = -1;
      std::string hex;
      words >> node >> hex;
      const status moved = t.repoint(peer_of(node), test::from_hex(hex));
      say(moved ? "ok" : "error " + moved.err().message);
    } else if (command == "drive") {
      int node = -1;
      words >> node;
      drivers.emplace_back([&, node] {
        while (driving) {
          const uint64_t sequence = next_sequence++;
          if (auto s = test::exchange(t, peer_of(node), uint16_t(self), sequence, sequence % 2 ? 4096 : 65536,
                                      std::chrono::seconds(5));
              !s) {
            say("failed exchange with node " + std::to_string(node) + ": " + s.err().message);
            std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the node may be down a while
          }
        }
      });
      say("ok");
    } else if (command == "halt") {
      driving = false;
      for (auto& d : drivers) d.join();
      drivers.clear();
      say("ok");
    }
  }
  driving = false;
  stop = true;
  for (auto& d : drivers) d.join();
  server.join();
}
