#pragma once
// Keys and values of one sequence, contiguous per layer: [capacity, kv_heads, head_dim].
#include <vector>

#include "base/check.hpp"
#include "model/model_config.hpp"

namespace troupe {

class kv_cache {
 public:
  kv_cache(const model_config& c, int capacity)
      : capacity_(capacity), row_(int64_t(c.num_kv_heads) * c.head_dim),
        keys_(size_t(c.num_layers) * size_t(capacity) * size_t(row_)),
        values_(keys_.size()) {}

  float* keys(int layer) { return keys_.data() + int64_t(layer) * capacity_ * row_; }
  float* values(int layer) { return values_.data() + int64_t(layer) * capacity_ * row_; }
  int length() const { return length_; }
  int capacity() const { return capacity_; }
  void advance(int tokens) {
    TROUPE_CHECK(length_ + tokens <= capacity_, "KV cache overflow");
    length_ += tokens;
  }

 private:
  int capacity_;
  int64_t row_;
  int length_ = 0;
  std::vector<float> keys_, values_;
};

}  // namespace troupe
