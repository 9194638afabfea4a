#pragma once
// What the next step runs, decided without actors or KV memory: running sequences first,
// oldest first, each for as many of its uncomputed tokens as the step's token budget
// leaves (so a long prompt is prefilled in chunks beside the decodes); then waiting ones,
// in queue order, while sequence slots, the budget and the step's share last. With several
// steps in flight (micro-batches) each step takes an even share of the active sequences.
#include <deque>
#include <vector>

#include "engine/kv_messages.hpp"

namespace troupe {

struct batch_limits {
  int max_num_seqs = 64;
  int max_num_batched_tokens = 2048;
  int micro_batches = 1;  // steps in flight at once, at least 1
};

// Where one running sequence stands.
struct sequence_progress {
  request_id id = 0;
  int known = 0;         // prompt + generated tokens
  int computed = 0;      // leading tokens whose keys and values are cached
  bool in_step = false;  // in a step in flight: the next plans leave it out
};

struct batch_choice {
  std::vector<kv_grow> grows;      // running sequences, and the positions each will hold
  std::vector<request_id> admits;  // waiting ones to admit, in queue order
  int budget_left = 0;             // tokens of the step the admitted ones may prefill
  bool empty() const { return grows.empty() && admits.empty(); }
};

batch_choice choose_batch(const batch_limits& limits, const std::vector<sequence_progress>& running,
                          const std::deque<request_id>& waiting);

// How many of an admitted sequence's tokens this step prefills, from what the choice left
// of its budget (taken from `budget_left`): those not found in the prefix cache.
int admitted_tokens(int known, int cached, int& budget_left);

}  // namespace troupe
