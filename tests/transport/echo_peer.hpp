#pragma once
// A ucx_echo_peer process started and connected, for the UCX tests and benchmark: what is
// sent to `peer` comes back under the same tag.
#include <memory>
#include <string>

#include "tests/transport/child_process.hpp"
#include "tests/transport/echo_peer_protocol.hpp"
#include "tests/transport/keep_unreceived.hpp"
#include "transport/ucx_transport.hpp"

namespace troupe::test {

struct echo_peer {
  std::unique_ptr<ucx_transport> self;
  std::unique_ptr<child_process> child;
  int peer = -1;

  // Sends `bytes` and returns what comes back.
  result<transport::message> echo(uint64_t tag, const std::vector<uint8_t>& bytes, std::chrono::milliseconds timeout) {
    if (auto s = self->send(peer, tag, bytes.data(), bytes.size(), timeout); !s) return s.err();
    return self->receive(tag, ~uint64_t{0}, timeout);
  }
};

inline result<echo_peer> start_echo_peer(const std::string& path, std::chrono::milliseconds patience) {
  auto self = ucx_transport::create(keep_unreceived);
  if (!self) return self.err();
  echo_peer p{std::move(self).value(), std::make_unique<child_process>(path)};
  if (!p.child->started()) return error{"cannot start " + path};
  const std::string prefix = address_prefix;
  auto line = p.child->read_line(patience);
  while (line && !line->starts_with(prefix)) line = p.child->read_line(patience);
  if (!line) return error{path + " printed no address"};
  if (!p.child->write_line(to_hex(p.self->address()))) return error{"cannot write to " + path};
  auto id = p.self->connect(from_hex(line->substr(prefix.size())));
  if (!id) return id.err();
  p.peer = *id;
  return p;
}

}  // namespace troupe::test
