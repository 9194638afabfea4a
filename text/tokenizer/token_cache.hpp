#pragma once
// Pre-token -> ids, remembered across encode calls: most words recur, and a lookup is far
// cheaper than BPE. Bounded: when full it starts again empty. Safe to share between
// threads (readers share a lock).
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/tokenizer/bpe.hpp"

namespace troupe {

class token_cache {
 public:
  explicit token_cache(size_t capacity) : capacity_(capacity) {}

  // Appends the ids remembered for `piece` to `ids`; false when there are none.
  bool find(std::string_view piece, std::vector<int>& ids) const {
    std::shared_lock lock(mutex_);
    const auto it = map_.find(piece);
    if (it == map_.end()) return false;
    ids.insert(ids.end(), it->second.begin(), it->second.end());
    return true;
  }

  void insert(std::string_view piece, const int* ids, size_t count) {
    std::unique_lock lock(mutex_);
    if (map_.size() >= capacity_) map_.clear();
    map_.try_emplace(std::string(piece), ids, ids + count);
  }

 private:
  size_t capacity_;
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, std::vector<int>, string_hash, std::equal_to<>> map_;
};

}  // namespace troupe
