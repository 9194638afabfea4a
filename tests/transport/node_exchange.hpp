#pragma once
// What a node of a UCX cluster does on the wire, for the tests that run three of them (the
// test process and ucx_node_peer processes): it serves dispatch requests by replying to
// their sender node, as expert_server does, and a stage's exchange sends a request to a
// node and awaits that node's reply, as remote_experts does.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tests/transport/byte_pattern.hpp"
#include "transport/tags.hpp"
#include "transport/transport.hpp"

namespace troupe::test {

// The peer id of each node, by node index; read again for every reply, so a restarted
// node's repointed id is used.
using node_peers = std::function<int(int node)>;

// Replies to every dispatch request until `stop`; `failed` hears of each reply that could
// not be sent.
inline void serve_requests(transport& t, const node_peers& peer_of, const std::atomic<bool>& stop,
                           const std::function<void(const std::string&)>& failed) {
  while (!stop) {
    auto request = t.receive(make_tag(channel::moe_dispatch, 0, 0), channel_mask, std::chrono::milliseconds(100));
    if (!request) continue;
    const int node = tag_sender(request->tag);
    const uint64_t reply_tag = make_tag(channel::moe_combine, uint16_t(node), tag_sequence(request->tag));
    if (auto s =
            t.send(peer_of(node), reply_tag, request->bytes.data(), request->bytes.size(), std::chrono::seconds(5));
        !s)
      failed("reply to node " + std::to_string(node) + ": " + s.err().message);
  }
}

// One request from node `self` to `peer` and its reply, both of `bytes` bytes (large ones
// travel as a rendezvous, small ones eagerly).
inline status exchange(transport& t, int peer, uint16_t self, uint64_t sequence, size_t bytes,
                       std::chrono::milliseconds timeout) {
  const auto request = byte_pattern(bytes, uint32_t(sequence));
  if (auto s = t.send(peer, make_tag(channel::moe_dispatch, self, sequence), request.data(), request.size(), timeout);
      !s)
    return s;
  auto reply = t.receive_from(peer, make_tag(channel::moe_combine, self, sequence), ~uint64_t{0}, timeout);
  if (!reply) return reply.err();
  if (reply->bytes != request) return error{"the reply's bytes differ from the request's"};
  return ok();
}

}  // namespace troupe::test
