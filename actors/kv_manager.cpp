#include "actors/kv_manager.hpp"

namespace troupe {

kv_manager_actor::behavior_type kv_manager(kv_manager_actor::stateful_pointer<kv_manager_state> self, int num_blocks,
                                           int block_size, int state_slots) {
  self->state.blocks = kv_blocks(num_blocks, block_size, state_slots);
  return {
      [=](kv_step_atom, const kv_step_request& r) { return self->state.blocks.apply(r); },
      [=](reset_atom) { self->state.blocks.reset(); },
      [=](usage_atom) { return self->state.blocks.usage(); },
  };
}

}  // namespace troupe
