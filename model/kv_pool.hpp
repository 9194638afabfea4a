#pragma once
// The cache memory of a range of layers (one pipeline stage). Full-attention layers keep
// paged keys and values, per layer [blocks, block_size, kv_heads, head_dim]; Gated DeltaNet
// layers keep a fixed recurrent state per sequence, in one of `state_slots` slots. Which
// blocks and slot belong to which sequence is kv_manager's business; this only holds the
// numbers.
#include <cstdint>
#include <vector>

#include "model/model_config.hpp"

namespace troupe {

class kv_pool {
 public:
  kv_pool(const model_config& c, int first_layer, int layer_count, int num_blocks, int block_size, int state_slots = 0);

  // A full-attention layer's keys and values.
  float* keys(int layer) { return keys_.data() + attention_offset(layer); }
  float* values(int layer) { return values_.data() + attention_offset(layer); }
  // A linear-attention layer's state in `slot`: its conv's last inputs [kernel - 1,
  // conv_dim], and the delta rule's [value_heads, key_dim, value_dim].
  float* conv_state(int layer, int slot) { return states_.data() + state_offset(layer, slot); }
  float* delta_state(int layer, int slot) { return conv_state(layer, slot) + conv_floats_; }
  int64_t conv_state_floats() const { return conv_floats_; }
  int64_t delta_state_floats() const { return delta_floats_; }

  int block_size() const { return block_size_; }
  int num_blocks() const { return num_blocks_; }
  int state_slots() const { return state_slots_; }
  int row() const { return row_; }

 private:
  int64_t attention_offset(int layer) const;
  int64_t state_offset(int layer, int slot) const;

  int first_layer_, num_blocks_, block_size_, state_slots_, row_;
  int64_t layer_floats_, conv_floats_, delta_floats_;
  std::vector<int> index_;  // per layer of the range: its index among the range's layers of its kind
  int linear_layers_ = 0;
  std::vector<float> keys_, values_, states_;
};

// Bytes of one KV block over every full-attention layer of the model, and of one sequence's
// recurrent state over every linear-attention layer: what the cache budget is divided by.
int64_t kv_block_bytes(const model_config& c, int block_size);
int64_t state_slot_bytes(const model_config& c);

}  // namespace troupe
