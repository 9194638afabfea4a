#include "transport/ucx_transport.hpp"

#include <poll.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>

#include <ucp/api/ucp.h>

#include "transport/network_interface.hpp"

namespace troupe {
namespace {

// Without UCX_TLS in the environment UCX opens every transport it finds. We ask it to
// report dead peers (UCP_ERR_HANDLING_MODE_PEER), which UCX 1.13's shared-memory
// transports (posix, sysv, cma) cannot do, so it sends over TCP even within a host anyway
// (UCX_TLS=sm,self cannot connect at all); opening them would only allocate shared
// memory, and RDMA needs devices. TCP, and self for an endpoint that sends to itself, work
// wherever the peers reach each other's IP, containers included. On an InfiniBand
// cluster set, e.g., UCX_TLS=rc,tcp,self.
constexpr const char* default_transports = "tcp,self";

// How long the progress thread sleeps without an event: UCX's timers (keepalive) need a
// progress call now and then even when no fd wakes it.
constexpr int idle_poll_ms = 100;

// How long a waiting caller progresses the worker itself before it sleeps: a reply that
// comes within this costs no hand-off from the progress thread (two thread wake-ups).
constexpr auto spin_time = std::chrono::microseconds(50);

// How long after a link was opened its failure fails the sends at once; the next one then
// opens a new link. A link that had been up longer is opened again by the next send at
// once: under load UCX may give up on a live peer (a keepalive timeout, a reset), and a
// reply dropped meanwhile would stall its step until the step's timeout. A dead peer's new
// link fails again within about this, so it costs one attempt a second.
constexpr auto reconnect_after = std::chrono::seconds(1);

// Where a zero-byte message points: UCX wants a valid address even for no bytes.
uint8_t no_bytes;

error ucx_error(const std::string& what, ucs_status_t s) { return {what + ": " + ucs_status_string(s)}; }

error link_down(int peer, ucs_status_t why) {
  return ucx_error("the link to UCX peer " + std::to_string(peer) + " is down", why);
}

}  // namespace

struct ucx_transport::operation {
  void* request = nullptr;
  bool done = false;
  ucs_status_t status = UCS_INPROGRESS;
  // The bytes, owned here: a send's copy, which UCX reads until the peer has taken it, or
  // an arrival's buffer, which UCX fills; an arrival's tag, as the sender gave it, and when
  // the transport took it.
  std::vector<uint8_t> bytes;
  uint64_t tag = 0;
  std::chrono::steady_clock::time_point arrived_at;
  // A send's peer, and when its link is closed if the peer has not taken the bytes by then.
  int peer = -1;
  std::chrono::steady_clock::time_point deadline;
};

result<std::unique_ptr<ucx_transport>> ucx_transport::create(std::chrono::milliseconds drop_unreceived_after,
                                                             const std::vector<std::string>& addresses) {
  std::string devices;
  if (!std::getenv("UCX_TLS") && !std::getenv("UCX_NET_DEVICES"))
    for (size_t i = 0; i < addresses.size(); ++i) {
      auto found = interface_of(addresses[i]);
      if (!found && i == 0)
        return error{found.err().message + " (UCX listens on the node's address only; set UCX_NET_DEVICES to choose)"};
      if (found && ("," + devices + ",").find("," + *found + ",") == std::string::npos)
        devices += (devices.empty() ? "" : ",") + *found;
    }
  ucp_config_t* config = nullptr;
  if (auto s = ucp_config_read(nullptr, nullptr, &config); s != UCS_OK) return ucx_error("ucp_config_read", s);
  ucs_status_t s = UCS_OK;
  if (!std::getenv("UCX_TLS")) s = ucp_config_modify(config, "TLS", default_transports);
  if (s == UCS_OK && !devices.empty()) s = ucp_config_modify(config, "NET_DEVICES", devices.c_str());
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  ucp_context_h raw_context = nullptr;
  const bool modified = s == UCS_OK;
  if (modified) s = ucp_init(&params, config, &raw_context);
  ucp_config_release(config);
  if (s != UCS_OK) return ucx_error(modified ? "ucp_init" : "ucp_config_modify", s);
  context_ptr context(raw_context, ucp_cleanup);

  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  ucp_worker_h raw_worker = nullptr;
  if (s = ucp_worker_create(context.get(), &worker_params, &raw_worker); s != UCS_OK)
    return ucx_error("ucp_worker_create", s);
  worker_ptr worker(raw_worker, ucp_worker_destroy);

  int event_fd = -1;
  if (s = ucp_worker_get_efd(worker.get(), &event_fd); s != UCS_OK) return ucx_error("ucp_worker_get_efd", s);
  ucp_address_t* address = nullptr;
  size_t address_length = 0;
  if (s = ucp_worker_get_address(worker.get(), &address, &address_length); s != UCS_OK)
    return ucx_error("ucp_worker_get_address", s);
  const auto* first = reinterpret_cast<const uint8_t*>(address);
  std::vector<uint8_t> bytes(first, first + address_length);
  ucp_worker_release_address(worker.get(), address);
  return std::unique_ptr<ucx_transport>(
      new ucx_transport(std::move(context), std::move(worker), event_fd, std::move(bytes), drop_unreceived_after));
}

ucx_transport::ucx_transport(context_ptr context, worker_ptr worker, int event_fd, std::vector<uint8_t> address,
                             std::chrono::milliseconds drop_unreceived_after)
    : context_(std::move(context)),
      worker_(std::move(worker)),
      event_fd_(event_fd),
      address_(std::move(address)),
      drop_unreceived_after_(drop_unreceived_after),
      progress_thread_([this] { progress_loop(); }) {}

ucx_transport::~ucx_transport() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    ucp_worker_signal(worker_.get());
  }
  progress_thread_.join();
  std::lock_guard lock(mutex_);
  for (auto& p : peers_) close_link(*p);  // which cancels the sends in flight
  // Released to UCX, which never touches them again: the worker goes before any progress.
  for (auto& op : inbox_)
    if (op->request) ucp_request_free(op->request);
  for (auto& op : sending_) ucp_request_free(op->request);
  for (auto& op : retired_)
    if (op->request) ucp_request_free(op->request);
  if (retired_flush_) ucp_request_free(retired_flush_);
}

void ucx_transport::on_peer_error(void* p, ucp_ep_h, ucs_status_t status) { static_cast<peer*>(p)->failure = status; }

result<int> ucx_transport::connect(const std::vector<uint8_t>& address) {
  if (address.empty()) return error{"an empty UCX worker address"};
  std::lock_guard lock(mutex_);
  auto [it, inserted] = peer_ids_.try_emplace(std::string(address.begin(), address.end()), int(peers_.size()));
  if (inserted) peers_.push_back(std::make_unique<peer>(peer{address, nullptr, UCS_ERR_NOT_CONNECTED, {}}));
  peer& p = *peers_[size_t(it->second)];
  if (p.endpoint && p.failure == UCS_OK) return it->second;
  close_link(p);
  if (auto s = open_link(p); !s) return s.err();
  return it->second;
}

status ucx_transport::repoint(int peer_id, const std::vector<uint8_t>& address) {
  if (address.empty()) return error{"an empty UCX worker address"};
  std::lock_guard lock(mutex_);
  if (peer_id < 0 || size_t(peer_id) >= peers_.size()) return error{"no UCX peer " + std::to_string(peer_id)};
  const std::string key(address.begin(), address.end());
  if (auto it = peer_ids_.find(key); it != peer_ids_.end() && it->second != peer_id)
    return error{"that address is UCX peer " + std::to_string(it->second) + "'s"};
  peer& p = *peers_[size_t(peer_id)];
  if (!p.address.empty()) peer_ids_.erase(std::string(p.address.begin(), p.address.end()));
  peer_ids_[key] = peer_id;
  p.address = address;
  ++p.repoints;
  close_link(p);
  return open_link(p);
}

result<int> ucx_transport::absent_peer() {
  std::lock_guard lock(mutex_);
  // Unreachable, as if a link had failed: the address comes with repoint.
  peers_.push_back(std::make_unique<peer>(peer{{}, nullptr, UCS_ERR_UNREACHABLE, std::chrono::steady_clock::now()}));
  return int(peers_.size() - 1);
}

// A link that cannot be opened (the peer is down, or cut off) is tried again by the first
// send a second later: until then sends fail at once.
status ucx_transport::open_link(peer& p) {
  if (p.address.empty()) {
    p.failure = UCS_ERR_UNREACHABLE;
    p.opened_at = std::chrono::steady_clock::now();
    return error{"the peer's node is down: it has no address yet"};
  }
  ucp_ep_params_t params{};
  params.field_mask =
      UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(p.address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = on_peer_error;
  params.err_handler.arg = &p;
  if (auto s = ucp_ep_create(worker_.get(), &params, &p.endpoint); s != UCS_OK) {
    p.endpoint = nullptr;
    p.failure = UCS_ERR_UNREACHABLE;
    p.opened_at = std::chrono::steady_clock::now();
    return ucx_error("ucp_ep_create", s);
  }
  p.failure = UCS_OK;
  p.opened_at = std::chrono::steady_clock::now();
  ucp_worker_signal(worker_.get());  // the connection's wireup needs progress
  return ok();
}

// Forced: a graceful close waits for the peer, which may be dead. Every request still
// outstanding on the link completes with UCS_ERR_CANCELED.
void ucx_transport::close_link(peer& p) {
  if (!p.endpoint) return;
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  params.flags = UCP_EP_CLOSE_FLAG_FORCE;
  void* request = ucp_ep_close_nbx(p.endpoint, &params);
  p.endpoint = nullptr;
  if (UCS_PTR_IS_PTR(request)) {
    while (ucp_request_check_status(request) == UCS_INPROGRESS) ucp_worker_progress(worker_.get());
    ucp_request_free(request);
  }
  progressed_.notify_all();
}

status ucx_transport::send(int peer_id, uint64_t tag, const void* data, size_t bytes,
                           std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (peer_id < 0 || size_t(peer_id) >= peers_.size()) return error{"no UCX peer " + std::to_string(peer_id)};
  peer& p = *peers_[size_t(peer_id)];
  const bool stalled = !p.endpoint && p.failure == UCS_ERR_TIMED_OUT;  // the peer may be fine
  const bool failed_after_a_while = p.failure != UCS_OK && p.failure != UCS_ERR_NOT_CONNECTED &&
                                    std::chrono::steady_clock::now() - p.opened_at > reconnect_after;
  if (stalled || failed_after_a_while) {
    close_link(p);
    if (auto s = open_link(p); !s) return s;
  }
  if (!p.endpoint || p.failure != UCS_OK) return link_down(peer_id, p.failure);

  auto op = std::make_unique<operation>();
  op->bytes.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + bytes);
  op->peer = peer_id;
  op->deadline = std::chrono::steady_clock::now() + timeout;
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  params.cb.send = [](void*, ucs_status_t s, void* user_data) {
    auto* o = static_cast<operation*>(user_data);
    o->status = s;
    o->done = true;
  };
  params.user_data = op.get();
  void* request = ucp_tag_send_nbx(p.endpoint, bytes ? op->bytes.data() : &no_bytes, bytes, tag, &params);
  if (UCS_PTR_IS_ERR(request)) return ucx_error("ucp_tag_send_nbx", UCS_PTR_STATUS(request));
  if (!request) return ok();  // sent already (a small message)
  op->request = request;
  sending_.push_back(std::move(op));
  ucp_worker_signal(worker_.get());  // the send needs progress
  return ok();
}

result<transport::message> ucx_transport::receive(uint64_t tag, uint64_t mask, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return receive_locked(lock, tag, mask, timeout, -1);
}

result<transport::message> ucx_transport::receive_from(int peer_id, uint64_t tag, uint64_t mask,
                                                       std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (peer_id < 0 || size_t(peer_id) >= peers_.size()) return error{"no UCX peer " + std::to_string(peer_id)};
  return receive_locked(lock, tag, mask, timeout, peer_id);
}

result<transport::message> ucx_transport::receive_locked(std::unique_lock<std::mutex>& lock, uint64_t tag,
                                                         uint64_t mask, std::chrono::milliseconds timeout, int from) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // A link closed under a stalled send (timed out) is not a dead peer: its reply may come.
  // A peer pointed at a new process is: the old one was asked.
  const uint64_t repoints = from < 0 ? 0 : peers_[size_t(from)]->repoints;
  auto repointed = [&] { return from >= 0 && peers_[size_t(from)]->repoints != repoints; };
  auto lost = [&] {
    if (from < 0) return false;
    const peer& p = *peers_[size_t(from)];
    return repointed() || (p.failure != UCS_OK && p.failure != UCS_ERR_TIMED_OUT);
  };
  const auto matches = [&](const auto& op) { return ((op->tag ^ tag) & mask) == 0; };
  // The oldest matching message whose bytes are in; one still arriving holds up nothing.
  auto arrived = inbox_.end();
  if (!wait_locked(lock, deadline, [&] {
        arrived = std::find_if(inbox_.begin(), inbox_.end(),
                               [&](const auto& op) { return op->done && op->status == UCS_OK && matches(op); });
        return arrived != inbox_.end() || lost();
      })) {
    const auto arriving =
        std::find_if(inbox_.begin(), inbox_.end(), [&](const auto& op) { return !op->done && matches(op); });
    if (arriving == inbox_.end()) return no_message_within(tag, mask, timeout);
    char text[160];
    std::snprintf(text, sizeof text, "the message with tag %#llx (%zu bytes) is still arriving",
                  static_cast<unsigned long long>((*arriving)->tag), (*arriving)->bytes.size());
    return error{text};
  }
  if (arrived == inbox_.end() && repointed())
    return error{"UCX peer " + std::to_string(from) + "'s process was started again while its reply was awaited"};
  if (arrived == inbox_.end()) return link_down(from, peers_[size_t(from)]->failure);
  auto op = std::move(*arrived);
  inbox_.erase(arrived);
  if (op->request) ucp_request_free(op->request);
  return message{op->tag, std::move(op->bytes)};
}

template <class Done>
bool ucx_transport::wait_locked(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point deadline,
                                Done done) {
  const auto spin_until = std::min(deadline, std::chrono::steady_clock::now() + spin_time);
  bool asleep = false;
  while (!done()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    if (now < spin_until) {
      progress_locked();
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
      continue;
    }
    // Our progress calls may have taken the events the progress thread armed for, and
    // what we posted may need progress: wake it to progress and arm again.
    if (!asleep) ucp_worker_signal(worker_.get());
    asleep = true;
    progressed_.wait_until(lock, deadline);
  }
  return true;
}

namespace {

// Takes the operations UCX has ended out of `ops`.
template <class Operations>
Operations take_done(Operations& ops) {
  const auto first_done = std::stable_partition(ops.begin(), ops.end(), [](const auto& op) { return !op->done; });
  Operations done(std::make_move_iterator(first_done), std::make_move_iterator(ops.end()));
  ops.erase(first_done, ops.end());
  return done;
}

}  // namespace

void ucx_transport::progress_locked() {
  bool any = false;
  while (ucp_worker_progress(worker_.get()) != 0) any = true;
  release_retired_locked();
  any = take_arrivals_locked() || any;
  if (!any) return;
  for (auto& op : take_done(sending_)) {
    peer& p = *peers_[size_t(op->peer)];
    if (op->status != UCS_OK && op->status != UCS_ERR_CANCELED && p.failure == UCS_OK) p.failure = op->status;
    end_locked(std::move(op));
  }
  progressed_.notify_all();
}

// Taking a message at once, rather than at its receive, lets a rendezvous sender finish as
// soon as this process runs: a send held until its receiver comes would, at its timeout,
// close the whole link and drop the other messages on it, replies still awaited among them.
bool ucx_transport::take_arrivals_locked() {
  bool any = false;
  ucp_tag_recv_info_t info{};
  while (ucp_tag_message_h found = ucp_tag_probe_nb(worker_.get(), 0, 0, 1, &info)) {
    any = true;
    auto op = std::make_unique<operation>();
    op->bytes.resize(info.length);
    op->tag = info.sender_tag;
    op->arrived_at = std::chrono::steady_clock::now();
    ucp_request_param_t params{};
    params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    params.cb.recv = [](void*, ucs_status_t s, const ucp_tag_recv_info_t*, void* user_data) {
      auto* o = static_cast<operation*>(user_data);
      o->status = s;
      o->done = true;
    };
    params.user_data = op.get();
    void* request =
        ucp_tag_msg_recv_nbx(worker_.get(), info.length ? op->bytes.data() : &no_bytes, info.length, found, &params);
    if (UCS_PTR_IS_ERR(request)) continue;  // UCX could not deliver it: like a message lost on the way
    if (request) {
      op->request = request;
    } else {  // in already (a small message)
      op->status = UCS_OK;
      op->done = true;
    }
    inbox_.push_back(std::move(op));
  }
  return any;
}

void ucx_transport::clean_inbox_locked() {
  const auto oldest_kept = std::chrono::steady_clock::now() - drop_unreceived_after_;
  // A failed arrival (its link closed midway) is nobody's message.
  const auto dropped = std::stable_partition(inbox_.begin(), inbox_.end(), [&](const auto& op) {
    return !op->done || (op->status == UCS_OK && op->arrived_at >= oldest_kept);
  });
  for (auto it = dropped; it != inbox_.end(); ++it) end_locked(std::move(*it));
  inbox_.erase(dropped, inbox_.end());
}

void ucx_transport::end_locked(std::unique_ptr<operation> op) {
  if (op->status != UCS_OK) {
    retired_.push_back(std::move(op));
    return;
  }
  if (op->request) ucp_request_free(op->request);
}

void ucx_transport::release_retired_locked() {
  const auto release_first = [this](size_t n) {
    for (size_t i = 0; i < n; ++i)
      if (retired_[i]->request) ucp_request_free(retired_[i]->request);
    retired_.erase(retired_.begin(), retired_.begin() + ptrdiff_t(n));
  };
  if (retired_flush_) {
    if (ucp_request_check_status(retired_flush_) == UCS_INPROGRESS) return;
    ucp_request_free(retired_flush_);
    retired_flush_ = nullptr;
    release_first(flushed_retired_);
  }
  if (retired_.empty()) return;
  ucp_request_param_t params{};
  void* flush = ucp_worker_flush_nbx(worker_.get(), &params);
  if (UCS_PTR_IS_ERR(flush)) return;  // tried again at the next progress
  if (!flush) return release_first(retired_.size());
  retired_flush_ = flush;
  flushed_retired_ = retired_.size();
}

// A send whose peer has not taken its bytes by its deadline closes the link (the peer is
// hung or gone), which cancels every send on it.
void ucx_transport::close_stalled_links_locked() {
  const auto now = std::chrono::steady_clock::now();
  for (const auto& op : sending_) {
    peer& p = *peers_[size_t(op->peer)];
    if (op->done || now < op->deadline || !p.endpoint) continue;
    close_link(p);
    p.failure = UCS_ERR_TIMED_OUT;
  }
}

void ucx_transport::progress_loop() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    progress_locked();
    close_stalled_links_locked();
    clean_inbox_locked();
    const ucs_status_t armed = ucp_worker_arm(worker_.get());
    if (armed == UCS_ERR_BUSY) continue;  // events came in since the last progress
    TROUPE_CHECK(armed == UCS_OK, ucs_status_string(armed));
    lock.unlock();
    pollfd fd{event_fd_, POLLIN, 0};
    poll(&fd, 1, idle_poll_ms);
    lock.lock();
  }
}

}  // namespace troupe
