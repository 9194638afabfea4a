#pragma once
// The Gated DeltaNet layer helper (qwen3_5_moe's linear attention), in the form of the
// other layer helpers: normed activations [tokens, hidden] of a whole batch in, the block's
// output out.
#include "model/forward_batch.hpp"
#include "model/kv_pool.hpp"
#include "model/model_config.hpp"
#include "model/qwen3_moe_weights.hpp"

namespace troupe {

// Projections to queries, keys and values (through a causal conv), the output gate z, beta
// and the decay; the gated delta rule per sequence over its recurrent state in `kv` (slot
// sequence_span::state_slot, begun afresh at a sequence's first token); the output norm
// gated by z; out_proj.
void linear_attention_block(const linear_attention_weights& w, const model_config& c, const forward_batch& batch,
                            const float* x, kv_pool& kv, int layer, float* out);

}  // namespace troupe
