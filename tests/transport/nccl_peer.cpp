// Rank 1 of test_nccl_transport's communicators, on device 1: it runs the commands its
// parent writes on its standard input (nccl_exchange.hpp lists them). Exit 1, with the
// reason on stderr, when its parent goes away.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "tests/transport/echo_peer_protocol.hpp"
#include "tests/transport/nccl_exchange.hpp"

using namespace troupe;

namespace {

constexpr auto patience = std::chrono::minutes(1);

struct peer {
  std::unique_ptr<nccl_transport> transport;
  cudaStream_t stream = nullptr;
};

// The command's failure, or "".
std::string run(peer& p, const std::string& command, std::istringstream& words) {
  if (command == "join") {
    std::string id;
    long timeout_ms = 0;
    words >> id >> timeout_ms;
    auto t = nccl_transport::create(test::from_hex(id), test::nccl_peer_rank, 2, test::nccl_peer_device,
                                    std::chrono::milliseconds(timeout_ms));
    if (!t) return t.err().message;
    p.transport = std::move(t).value();
    TROUPE_CUDA_CHECK(cudaStreamCreateWithFlags(&p.stream, cudaStreamNonBlocking));
    return "";
  }
  if (!p.transport) return "not joined";
  uint32_t seed = 0;
  words >> seed;
  if (command == "transfer") {
    std::vector<size_t> sizes;
    for (size_t size; words >> size;) sizes.push_back(size);
    return test::transfer(*p.transport, seed, sizes, p.stream, patience);
  }
  if (command == "all_to_all") {
    test::two_rank_counts counts{};
    words >> counts[0][0] >> counts[0][1] >> counts[1][0] >> counts[1][1];
    return test::all_to_all(*p.transport, seed, counts, p.stream, patience);
  }
  return "no command " + command;
}

}  // namespace

int main() {
  // The pipe to the parent is for replies alone: CUDA and NCCL print to standard output.
  FILE* replies = fdopen(dup(1), "w");
  dup2(2, 1);
  peer p;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command;
    words >> command;
    if (command == "quit") return 0;
    std::string failure = run(p, command, words);
    std::replace(failure.begin(), failure.end(), '\n', ' ');  // one line a reply
    std::fprintf(replies, "%s\n", failure.empty() ? "ok" : ("error: " + failure).c_str());
    std::fflush(replies);
  }
  std::fprintf(stderr, "nccl_peer: its parent went away\n");
  return 1;
}
