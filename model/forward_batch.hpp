#pragma once
// The tokens of one forward step: several sequences' new tokens concatenated, each with
// where it starts and the KV blocks it owns (continuous batching mixes prefill chunks
// and single decode tokens in one batch).
#include <vector>

namespace troupe {

struct sequence_span {
  int first_token = 0;           // index of its first token in forward_batch::token_ids
  int tokens = 0;                // how many new tokens it has in this step
  int start = 0;                 // position of its first new token in the sequence
  std::vector<int> block_table;  // its KV blocks, covering positions 0..start + tokens - 1
  bool all_logits = false;       // logits for every new token (prompt log-probs), else the last
};

struct forward_batch {
  std::vector<int> token_ids;
  std::vector<sequence_span> sequences;
};

}  // namespace troupe
