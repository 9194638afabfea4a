#include "model/single_sequence.hpp"

#include <numeric>

namespace troupe {

static int blocks_for(int capacity, int block_size) { return (capacity + block_size - 1) / block_size; }

single_sequence::single_sequence(const moe_model& model, int capacity, int block_size)
    : model_(model),
      kv_(model.config(), 0, model.config().num_layers, blocks_for(capacity, block_size), block_size, 1),
      experts_(model.weights(), 0, model.config().num_experts),
      block_table_(static_cast<size_t>(blocks_for(capacity, block_size))) {
  std::iota(block_table_.begin(), block_table_.end(), 0);
}

std::vector<float> single_sequence::forward(std::span<const int> tokens, bool all_logits) {
  const int n = int(tokens.size());
  TROUPE_CHECK(length_ + n <= kv_.num_blocks() * kv_.block_size(), "sequence longer than its capacity");
  forward_batch batch{{tokens.begin(), tokens.end()},
                      {{0, n, length_, block_table_, all_logits ? logits_rows::all : logits_rows::last, 0}}};
  auto hidden = model_.embed(batch);
  TROUPE_CHECK(model_.run_layers(0, model_.config().num_layers, batch, kv_, experts_, hidden).ok(),
               "local experts cannot fail");
  length_ += n;
  return model_.logits(batch, hidden);
}

}  // namespace troupe
