#pragma once
// The paged KV memory of a range of layers (one pipeline stage): per layer, keys and
// values laid out as [blocks, block_size, kv_heads, head_dim]. Which blocks belong to
// which sequence is kv_manager's business; this only holds the numbers.
#include <cstdint>
#include <vector>

#include "base/check.hpp"
#include "model/model_config.hpp"

namespace troupe {

class kv_pool {
 public:
  kv_pool(const model_config& c, int first_layer, int layer_count, int num_blocks, int block_size)
      : first_layer_(first_layer), layer_count_(layer_count), num_blocks_(num_blocks),
        block_size_(block_size), row_(c.num_kv_heads * c.head_dim),
        layer_floats_(int64_t(num_blocks) * block_size * row_),
        keys_(size_t(layer_floats_ * layer_count)), values_(keys_.size()) {}

  float* keys(int layer) { return keys_.data() + offset(layer); }
  float* values(int layer) { return values_.data() + offset(layer); }
  int block_size() const { return block_size_; }
  int num_blocks() const { return num_blocks_; }
  int row() const { return row_; }

 private:
  int64_t offset(int layer) const {
    TROUPE_CHECK(layer >= first_layer_ && layer < first_layer_ + layer_count_, "layer outside this KV pool");
    return int64_t(layer - first_layer_) * layer_floats_;
  }
  int first_layer_, layer_count_, num_blocks_, block_size_, row_;
  int64_t layer_floats_;
  std::vector<float> keys_, values_;
};

}  // namespace troupe
