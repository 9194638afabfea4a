#include "gateway/openai/response_store.hpp"

namespace troupe {

void response_store::drop(std::map<std::string, stored>::iterator it) {
  bytes_ -= it->second.bytes;
  order_.erase(it->second.order);
  entries_.erase(it);
}

void response_store::expire(clock::time_point now) {
  while (!order_.empty()) {
    auto it = entries_.find(order_.front());
    if (it->second.expires > now) break;
    drop(it);
  }
}

void response_store::put(const std::string& id, entry e, clock::time_point now) {
  const size_t size = id.size() + e.response.size() + e.conversation.dump().size();
  std::lock_guard lock(mutex_);
  expire(now);
  if (auto old = entries_.find(id); old != entries_.end()) drop(old);
  if (size > limits_.max_bytes) return;
  while (!order_.empty() && (entries_.size() >= limits_.max_responses || bytes_ + size > limits_.max_bytes))
    drop(entries_.find(order_.front()));
  order_.push_back(id);
  entries_[id] = {std::move(e), size, now + limits_.ttl, std::prev(order_.end())};
  bytes_ += size;
}

std::optional<response_store::entry> response_store::get(const std::string& id, clock::time_point now) {
  std::lock_guard lock(mutex_);
  expire(now);
  auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  return it->second.e;
}

bool response_store::erase(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return false;
  drop(it);
  return true;
}

size_t response_store::size() {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

size_t response_store::bytes() {
  std::lock_guard lock(mutex_);
  return bytes_;
}

}  // namespace troupe
