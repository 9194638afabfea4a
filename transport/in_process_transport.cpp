#include "transport/in_process_transport.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace troupe {

in_process_transport::in_process_transport(std::shared_ptr<in_process_hub> hub)
    : hub_(std::move(hub)), inbox_(std::make_shared<in_process_hub::inbox>()) {
  std::lock_guard lock(hub_->mutex_);
  id_ = hub_->next_id_++;
  hub_->inboxes_[id_] = inbox_;
}

in_process_transport::~in_process_transport() {
  std::lock_guard lock(hub_->mutex_);
  hub_->inboxes_.erase(id_);
}

std::vector<uint8_t> in_process_transport::address() const {
  std::vector<uint8_t> a(sizeof id_);
  std::memcpy(a.data(), &id_, sizeof id_);
  return a;
}

// A peer's id is its id in the hub, so connecting twice gives the same one.
result<int> in_process_transport::connect(const std::vector<uint8_t>& address) {
  int id = 0;
  if (address.size() != sizeof id) return error{"not an in-process transport address"};
  std::memcpy(&id, address.data(), sizeof id);
  std::lock_guard lock(hub_->mutex_);
  if (!hub_->inboxes_.contains(id)) return error{"no in-process endpoint " + std::to_string(id)};
  return id;
}

status in_process_transport::repoint(int peer, const std::vector<uint8_t>&) {
  return error{"in-process peer " + std::to_string(peer) + " cannot move: its endpoint lives as long as this process"};
}

result<int> in_process_transport::absent_peer() {
  return error{"an in-process peer is never absent: its endpoint lives as long as this process"};
}

status in_process_transport::send(int peer, uint64_t tag, const void* data, size_t bytes, std::chrono::milliseconds) {
  std::shared_ptr<in_process_hub::inbox> to;
  {
    std::lock_guard lock(hub_->mutex_);
    auto it = hub_->inboxes_.find(peer);
    if (it == hub_->inboxes_.end()) return error{"in-process peer " + std::to_string(peer) + " is gone"};
    to = it->second;
  }
  const auto* first = static_cast<const uint8_t*>(data);
  message m{tag, std::vector<uint8_t>(first, first + bytes)};
  std::lock_guard lock(to->mutex);
  to->messages.push_back(std::move(m));
  to->arrived.notify_all();
  return ok();
}

result<transport::message> in_process_transport::receive_from(int peer, uint64_t tag, uint64_t mask,
                                                              std::chrono::milliseconds timeout) {
  {
    std::lock_guard lock(hub_->mutex_);
    if (!hub_->inboxes_.contains(peer)) return error{"in-process peer " + std::to_string(peer) + " is gone"};
  }
  return receive(tag, mask, timeout);
}

result<transport::message> in_process_transport::receive(uint64_t tag, uint64_t mask,
                                                         std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(inbox_->mutex);
  auto& messages = inbox_->messages;
  const auto matches = [&](const message& m) { return ((m.tag ^ tag) & mask) == 0; };
  auto it = messages.end();
  const bool found = inbox_->arrived.wait_until(lock, deadline, [&] {
    it = std::find_if(messages.begin(), messages.end(), matches);
    return it != messages.end();
  });
  if (!found) return no_message_within(tag, mask, timeout);
  message m = std::move(*it);
  messages.erase(it);
  return m;
}

}  // namespace troupe
