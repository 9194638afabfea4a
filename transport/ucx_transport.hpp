#pragma once
// The transport between processes, on UCX's tagged messages (UCP): one context and worker
// per transport object, peers reached by worker address. A thread progresses the worker,
// sleeping on its event fd when idle, so messages, connections and peer failures are
// handled while nobody waits in send or receive; a caller that waits progresses it
// itself for a few microseconds first, which saves two thread wake-ups on a quick reply.
//
// UCX's own environment variables (UCX_TLS, UCX_NET_DEVICES, ...) choose what it uses;
// without UCX_TLS it uses tcp and self, which work in any container (ucx_transport.cpp
// says why). A send never waits for the peer's receive: it copies the bytes, and the peer's
// transport takes every message as it arrives (a large one as a rendezvous), whether or
// not anyone there receives it yet. So peers that each send before they receive never wait
// on each other, and a message nobody wants (the reply to a step that already failed)
// never holds up its sender: only a peer process that stops taking messages does. A dead
// peer (its connection reset) fails the sends to it from then on; a receive, which takes
// from any peer, fails at its timeout.
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <ucp/api/ucp_def.h>

#include "transport/transport.hpp"

namespace troupe {

class ucx_transport final : public transport {
 public:
  // A message no receive has taken within `drop_unreceived_after` of its arrival is
  // dropped: its receiver has given up (a cluster passes its step timeout). Given
  // `addresses` (the node's own in cluster.conf first, which must be this host's, then the
  // other nodes'), UCX uses only the network interfaces of this host that hold them, unless
  // UCX_TLS or UCX_NET_DEVICES in the environment choose otherwise; none: every interface.
  static result<std::unique_ptr<ucx_transport>> create(std::chrono::milliseconds drop_unreceived_after,
                                                       const std::vector<std::string>& addresses = {});
  ~ucx_transport() override;
  ucx_transport(const ucx_transport&) = delete;
  ucx_transport& operator=(const ucx_transport&) = delete;

  std::vector<uint8_t> address() const override { return address_; }
  // Connecting again to a peer whose link failed (or was closed by a timed-out send)
  // makes a new link under the same peer id. A link that cannot be opened (by connect or
  // repoint: the peer is down or cut off) is tried again by the first send a second later.
  result<int> connect(const std::vector<uint8_t>& address) override;
  // Closes the peer's link and opens one to the new address under the same id.
  status repoint(int peer, const std::vector<uint8_t>& address) override;
  result<int> absent_peer() override;
  // Copies the bytes and returns: the peer's transport takes them as soon as its process
  // runs. A send the peer has not taken within `timeout` (its process is stopped or hung)
  // closes the link to it (UCX cannot cancel one send), dropping what it still held; the
  // next send opens a new one. A link that failed (the peer's process died, or UCX gave up
  // on a live one: a reset, a keepalive timeout under load) is opened again by the next
  // send, once it has been up a second (else that send fails, as do the others until
  // then): a peer that is alive is reached again without anyone calling connect, a dead
  // one fails again.
  status send(int peer, uint64_t tag, const void* data, size_t bytes, std::chrono::milliseconds timeout) override;
  // A receive that times out while its message is arriving leaves that message to the next
  // receive its tag matches: a slow arrival (a loaded host, a stalled sender) comes late,
  // never lost.
  result<message> receive(uint64_t tag, uint64_t mask, std::chrono::milliseconds timeout) override;
  result<message> receive_from(int peer, uint64_t tag, uint64_t mask, std::chrono::milliseconds timeout) override;

 private:
  struct peer {
    std::vector<uint8_t> address;
    ucp_ep_h endpoint = nullptr;
    ucs_status_t failure;                             // set by UCX's error handler; UCS_OK while the link is up
    std::chrono::steady_clock::time_point opened_at;  // when endpoint was opened
    uint64_t repoints = 0;  // each a new process at this id: a reply its old one owed never comes
  };
  struct operation;
  using context_ptr = std::unique_ptr<ucp_context, void (*)(ucp_context_h)>;
  using worker_ptr = std::unique_ptr<ucp_worker, void (*)(ucp_worker_h)>;

  ucx_transport(context_ptr context, worker_ptr worker, int event_fd, std::vector<uint8_t> address,
                std::chrono::milliseconds drop_unreceived_after);
  static void on_peer_error(void* peer, ucp_ep_h, ucs_status_t status);
  status open_link(peer& p);
  // Receives a message, from any peer (from < 0) or failing once the link to `from` fails.
  result<message> receive_locked(std::unique_lock<std::mutex>& lock, uint64_t tag, uint64_t mask,
                                 std::chrono::milliseconds timeout, int from);
  void close_link(peer& p);
  template <class Done>
  bool wait_locked(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point deadline, Done done);
  void progress_loop();
  void progress_locked();
  // Moves every message UCX holds for this worker into inbox_; true if there was one.
  bool take_arrivals_locked();
  // Ends the arrivals that failed and drops those nobody received in time: the progress
  // thread's upkeep, with close_stalled_links_locked, not every waiting receive's.
  void clean_inbox_locked();
  void close_stalled_links_locked();
  // Frees an operation UCX has ended: at once if it succeeded, else once it is retired.
  void end_locked(std::unique_ptr<operation> op);
  void release_retired_locked();

  context_ptr context_;
  worker_ptr worker_;
  const int event_fd_;
  const std::vector<uint8_t> address_;

  // Guards the worker (created UCS_THREAD_MODE_SERIALIZED) and everything below.
  std::mutex mutex_;
  std::condition_variable progressed_;
  std::vector<std::unique_ptr<peer>> peers_;
  std::map<std::string, int> peer_ids_;  // by address
  // Every message taken from UCX, oldest first, arrived or still arriving, until a receive
  // whose tag matches takes it or it is dropped.
  std::vector<std::unique_ptr<operation>> inbox_;
  const std::chrono::milliseconds drop_unreceived_after_;
  std::vector<std::unique_ptr<operation>> sending_;  // sends the peers have not taken yet
  // Operations UCX ended with an error, a closed or failed link's cancelled ones among
  // them. UCX's TCP transport cannot cancel what it has begun to send: the closed link's
  // endpoint may still send from a cancelled send's bytes, receive into a cancelled
  // receive's, and complete their requests, until UCX destroys it. A worker flush ends only
  // after that, so these wait for a flush begun after they ended: the first
  // `flushed_retired_` of them for `retired_flush_`.
  std::vector<std::unique_ptr<operation>> retired_;
  void* retired_flush_ = nullptr;
  size_t flushed_retired_ = 0;
  bool stopping_ = false;
  std::thread progress_thread_;
};

}  // namespace troupe
