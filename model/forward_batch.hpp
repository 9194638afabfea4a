#pragma once
// The tokens of one forward step: several sequences' new tokens concatenated, each with
// where it starts, the KV blocks it owns and its recurrent-state slot (continuous batching
// mixes prefill chunks and single decode tokens in one batch).
#include <cstdint>
#include <vector>

namespace troupe {

enum class logits_rows : uint8_t { none, last, all };

struct sequence_span {
  int first_token = 0;                     // index of its first token in forward_batch::token_ids
  int tokens = 0;                          // how many new tokens it has in this step
  int start = 0;                           // position of its first new token in the sequence
  std::vector<int> block_table;            // its KV blocks, covering positions 0..start + tokens - 1
  logits_rows logits = logits_rows::last;  // none for a prefill chunk that samples nothing
  int state_slot = -1;  // its recurrent state in linear-attention layers (kv_pool), if the model has any
};

struct forward_batch {
  std::vector<int> token_ids;
  std::vector<sequence_span> sequences;
};

}  // namespace troupe
