#pragma once
#include "actors/actors.hpp"
#include "engine/kv_blocks.hpp"

namespace troupe {

struct kv_manager_state {
  static inline const char* name = "kv_manager";
  kv_blocks blocks{1, 1};
};

// Owns the block bookkeeping of every stage's KV pool (all stages of a replica share the
// same block ids: a block is one range of positions in each stage's layers), and the
// recurrent-state slots of models with linear-attention layers (0 slots otherwise).
kv_manager_actor::behavior_type kv_manager(kv_manager_actor::stateful_pointer<kv_manager_state> self, int num_blocks,
                                           int block_size, int state_slots);

}  // namespace troupe
