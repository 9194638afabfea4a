#pragma once
// The transport between endpoints of one process (tests, single-process clusters): every
// endpoint of a hub has an inbox, a send copies the bytes into the peer's inbox and never
// waits, and an endpoint's address is its id in the hub.
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>

#include "transport/transport.hpp"

namespace troupe {

// The endpoints that can reach each other; they share it.
class in_process_hub {
 private:
  friend class in_process_transport;
  struct inbox {
    std::mutex mutex;
    std::condition_variable arrived;
    std::deque<transport::message> messages;
  };

  std::mutex mutex_;
  int next_id_ = 0;
  std::map<int, std::shared_ptr<inbox>> inboxes_;
};

class in_process_transport final : public transport {
 public:
  explicit in_process_transport(std::shared_ptr<in_process_hub> hub);
  ~in_process_transport() override;
  in_process_transport(const in_process_transport&) = delete;
  in_process_transport& operator=(const in_process_transport&) = delete;

  std::vector<uint8_t> address() const override;
  result<int> connect(const std::vector<uint8_t>& address) override;
  // An endpoint of a hub lives as long as its process: none is ever started again.
  status repoint(int peer, const std::vector<uint8_t>& address) override;
  result<int> absent_peer() override;
  status send(int peer, uint64_t tag, const void* data, size_t bytes, std::chrono::milliseconds timeout) override;
  result<message> receive(uint64_t tag, uint64_t mask, std::chrono::milliseconds timeout) override;
  // An in-process peer lives as long as this process: as receive, once it is known.
  result<message> receive_from(int peer, uint64_t tag, uint64_t mask, std::chrono::milliseconds timeout) override;

 private:
  std::shared_ptr<in_process_hub> hub_;
  int id_;
  std::shared_ptr<in_process_hub::inbox> inbox_;
};

}  // namespace troupe
