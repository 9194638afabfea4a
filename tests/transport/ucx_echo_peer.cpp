// The peer process of the UCX tests and benchmark: it exchanges worker addresses with its
// parent (echo_peer_protocol.hpp), then sends every message it receives back to the parent
// under the same tag, until the quit tag. Exit 1, with the reason on stderr, on a failure.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "tests/transport/echo_peer_protocol.hpp"
#include "tests/transport/keep_unreceived.hpp"
#include "transport/ucx_transport.hpp"

using namespace troupe;

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "ucx_echo_peer: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main() {
  constexpr auto patience = std::chrono::minutes(1);
  auto created = ucx_transport::create(test::keep_unreceived);
  if (!created) return fail(created.err().message);
  auto& t = **created;
  std::cout << test::address_prefix << test::to_hex(t.address()) << std::endl;
  dup2(2, 1);  // UCX logs to standard output, and nobody reads the pipe from here on
  std::string line;
  if (!std::getline(std::cin, line)) return fail("no parent address on stdin");
  auto parent = t.connect(test::from_hex(line));
  if (!parent) return fail(parent.err().message);
  for (;;) {
    auto m = t.receive(0, 0, patience);
    if (!m) return fail(m.err().message);
    if (m->tag == test::echo_quit_tag) return 0;
    if (auto s = t.send(*parent, m->tag, m->bytes.data(), m->bytes.size(), patience); !s) return fail(s.err().message);
  }
}
