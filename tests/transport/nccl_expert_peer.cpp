// The other GPU of test_nccl_experts: an nccl_expert_server on cuda:1 in a process of its
// own, which the test can kill. It runs the commands its parent writes on its standard
// input, one a line, and answers each with "ok" or "error: why" on its standard output
// (what CUDA and NCCL print goes to its standard error):
//
//   load DIR FIRST LAST MAX_TOKENS          DIR's model with random weights (the test's own
//                                           on cuda:0, bit for bit), serving experts [FIRST, LAST)
//   join STAGE SESSION ID RANK RANKS        nccl_expert_server::join (ID in hex)
//   step STAGE SESSION TOKENS FIRST LAST    nccl_expert_server::serve
//
// It ends when its parent closes the pipe.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "kernels/cuda/check.cuh"
#include "tests/transport/echo_peer_protocol.hpp"
#include "transport/nccl_expert_server.hpp"

using namespace troupe;

namespace {

constexpr int device = 1;
constexpr auto join_timeout = std::chrono::seconds(30);
constexpr auto wait_timeout = std::chrono::seconds(3);

// The command's failure, or "".
std::string run(std::unique_ptr<nccl_expert_server>& server, const std::string& command, std::istringstream& words) {
  if (command == "load") {
    std::string dir;
    nccl_expert_server::options o{0, 0, device, 0, join_timeout, wait_timeout};
    words >> dir >> o.first_expert >> o.last_expert >> o.max_tokens;
    TROUPE_CUDA_CHECK(cudaSetDevice(device));
    auto weights = load_gpu_weights(dir, /*dummy=*/true);
    if (!weights) return weights.err().message;
    auto s = nccl_expert_server::create(*weights, o);
    if (!s) return s.err().message;
    server = std::move(*s);
    return "";
  }
  if (!server) return "nothing loaded";
  if (command == "join") {
    expert_session s;
    std::string id;
    words >> s.stage >> s.session >> id >> s.rank >> s.ranks;
    s.id = test::from_hex(id);
    auto joined = server->join(s);
    return joined ? "" : joined.err().message;
  }
  if (command == "step") {
    expert_step s;
    words >> s.stage >> s.session >> s.tokens >> s.first_layer >> s.last_layer;
    auto served = server->serve(s);
    return served ? "" : served.err().message;
  }
  return "no command " + command;
}

}  // namespace

int main() {
  // The pipe to the parent is for replies alone: CUDA and NCCL print to standard output.
  FILE* replies = fdopen(dup(1), "w");
  dup2(2, 1);
  std::unique_ptr<nccl_expert_server> server;
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string command;
    words >> command;
    std::string failure = run(server, command, words);
    std::replace(failure.begin(), failure.end(), '\n', ' ');  // one line a reply
    std::fprintf(replies, "%s\n", failure.empty() ? "ok" : ("error: " + failure).c_str());
    std::fflush(replies);
  }
  return 0;
}
