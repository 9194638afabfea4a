#pragma once
// The Responses API's stored responses (store: true, the default): each response object,
// for GET /v1/responses/{id}, and its conversation as chat messages, which a request naming
// it as previous_response_id continues. Kept in memory, bounded in count and bytes, each for
// a time to live; the oldest go first. A response evicted or expired is gone: a request
// naming it gets a 404. Shared between the gateway and its preparers (thread-safe).
#include <chrono>
#include <cstddef>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace troupe {

struct response_store_limits {
  size_t max_responses = 10000;
  size_t max_bytes = size_t(256) << 20;
  std::chrono::seconds ttl{3600};
};

class response_store {
 public:
  using clock = std::chrono::steady_clock;
  struct entry {
    std::string response;                 // the response object, as JSON text
    nlohmann::ordered_json conversation;  // chat messages, the reply's included
  };

  explicit response_store(response_store_limits limits = {}) : limits_(limits) {}

  void put(const std::string& id, entry e, clock::time_point now = clock::now());
  std::optional<entry> get(const std::string& id, clock::time_point now = clock::now());
  bool erase(const std::string& id);
  size_t size();
  size_t bytes();

 private:
  struct stored {
    entry e;
    size_t bytes;
    clock::time_point expires;
    std::list<std::string>::iterator order;
  };
  void drop(std::map<std::string, stored>::iterator it);
  void expire(clock::time_point now);

  response_store_limits limits_;
  std::mutex mutex_;
  std::map<std::string, stored> entries_;
  std::list<std::string> order_;  // oldest first
  size_t bytes_ = 0;
};

}  // namespace troupe
