#pragma once
// Byte messages between the processes of a cluster, matched by 64-bit tags: how
// activations travel (a stage's residual rows to the next stage, MoE dispatch and
// combine), keyed by step id and channel (transport/tags.hpp). Control messages go over
// CAF instead. Implementations: in_process_transport (one process), ucx_transport.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "base/result.hpp"

namespace troupe {

// Every call is safe from several threads at once; none waits past its timeout.
class transport {
 public:
  struct message {
    uint64_t tag = 0;
    std::vector<uint8_t> bytes;
  };

  virtual ~transport() = default;

  // This endpoint's address: opaque bytes that peers pass to connect (they travel in
  // control messages over CAF).
  virtual std::vector<uint8_t> address() const = 0;

  // A peer by its address; connecting twice to one address gives the same peer id.
  virtual result<int> connect(const std::vector<uint8_t>& address) = 0;

  // Points `peer` at another address: the peer's process was started again, and what was
  // sent to its old one went nowhere. Its id stays, so whoever holds it reaches the new one.
  virtual status repoint(int peer, const std::vector<uint8_t>& address) = 0;

  // A peer id for a node that is down now, so it has no address: sends to it fail as to a
  // dead peer until repoint gives it the address of its new process.
  virtual result<int> absent_peer() = 0;

  // Sends `bytes` to `peer` under `tag`. It never waits for the peer's receive (the bytes
  // are copied), so peers that send to each other before receiving cannot block each
  // other. An error when the link to the peer is down; a peer that does not take the bytes
  // within `timeout` has its link closed (the transport says how it reopens).
  virtual status send(int peer, uint64_t tag, const void* data, size_t bytes, std::chrono::milliseconds timeout) = 0;

  // The next message, from any peer, whose tag equals `tag` on the bits set in `mask`: its
  // full tag and bytes. An error when none has come within `timeout`.
  virtual result<message> receive(uint64_t tag, uint64_t mask, std::chrono::milliseconds timeout) = 0;

  // The same for a message only `peer` sends (a reply): an error as soon as the link to it
  // is known to be down (its process died) or the peer is repointed (the process asked
  // is gone), instead of at the timeout.
  virtual result<message> receive_from(int peer, uint64_t tag, uint64_t mask, std::chrono::milliseconds timeout) = 0;
};

// What receive returns when its timeout passes, from every transport alike.
inline error no_message_within(uint64_t tag, uint64_t mask, std::chrono::milliseconds timeout) {
  char text[128];
  std::snprintf(text, sizeof text, "no message with tag %#llx under mask %#llx within %lld ms",
                static_cast<unsigned long long>(tag), static_cast<unsigned long long>(mask),
                static_cast<long long>(timeout.count()));
  return {text};
}

}  // namespace troupe
