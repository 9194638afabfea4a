#include "model/kv_pool.hpp"

#include <algorithm>

#include "base/check.hpp"

namespace troupe {
namespace {

int64_t conv_floats(const model_config& c) {
  return int64_t(std::max(c.linear_conv_kernel_dim - 1, 0)) * c.linear_conv_dim();
}
int64_t delta_floats(const model_config& c) {
  return int64_t(c.linear_num_value_heads) * c.linear_key_head_dim * c.linear_value_head_dim;
}

}  // namespace

kv_pool::kv_pool(const model_config& c, int first_layer, int layer_count, int num_blocks, int block_size,
                 int state_slots)
    : first_layer_(first_layer),
      num_blocks_(num_blocks),
      block_size_(block_size),
      state_slots_(state_slots),
      row_(c.num_kv_heads * c.head_dim),
      layer_floats_(int64_t(num_blocks) * block_size * row_),
      conv_floats_(conv_floats(c)),
      delta_floats_(delta_floats(c)) {
  // A linear layer's index is stored as -1 - index, so the checks below can tell the kinds apart.
  int attention_layers = 0;
  for (int i = first_layer; i < first_layer + layer_count; ++i)
    index_.push_back(c.is_linear_layer(i) ? -1 - linear_layers_++ : attention_layers++);
  keys_.resize(size_t(layer_floats_ * attention_layers));
  values_.resize(keys_.size());
  states_.resize(size_t((conv_floats_ + delta_floats_) * linear_layers_ * state_slots));
}

int64_t kv_pool::attention_offset(int layer) const {
  const int at = layer - first_layer_;
  TROUPE_CHECK(at >= 0 && at < int(index_.size()), "layer outside this KV pool");
  TROUPE_CHECK(index_[size_t(at)] >= 0, "keys and values of a linear-attention layer");
  return int64_t(index_[size_t(at)]) * layer_floats_;
}

int64_t kv_pool::state_offset(int layer, int slot) const {
  const int at = layer - first_layer_;
  TROUPE_CHECK(at >= 0 && at < int(index_.size()), "layer outside this KV pool");
  TROUPE_CHECK(index_[size_t(at)] < 0, "recurrent state of a full-attention layer");
  TROUPE_CHECK(slot >= 0 && slot < state_slots_, "recurrent-state slot outside this KV pool");
  const int64_t linear = -1 - index_[size_t(at)];
  return (int64_t(slot) * linear_layers_ + linear) * (conv_floats_ + delta_floats_);
}

int64_t kv_block_bytes(const model_config& c, int block_size) {
  int attention_layers = 0;
  for (int i = 0; i < c.num_layers; ++i) attention_layers += !c.is_linear_layer(i);
  return int64_t(block_size) * c.num_kv_heads * c.head_dim * int64_t(sizeof(float)) * 2 * attention_layers;
}

int64_t state_slot_bytes(const model_config& c) {
  int linear_layers = 0;
  for (int i = 0; i < c.num_layers; ++i) linear_layers += c.is_linear_layer(i);
  return (conv_floats(c) + delta_floats(c)) * int64_t(sizeof(float)) * linear_layers;
}

}  // namespace troupe
