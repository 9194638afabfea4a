#pragma once
// Layer helpers shared by the MoE architectures: each takes normed activations
// [tokens, hidden] of a whole batch and writes the block's output (residual not added).
#include "model/expert_executor.hpp"
#include "model/forward_batch.hpp"
#include "model/kv_pool.hpp"
#include "model/model_config.hpp"
#include "model/qwen3_moe_weights.hpp"

namespace troupe {

// Self-attention with per-head q/k RMSNorm and RoPE. Stores each sequence's new keys and
// values in `kv` through its block table, then attends over all of its positions.
void attention_block(const attention_weights& w, const model_config& c, const forward_batch& batch,
                     const float* x, kv_pool& kv, int layer, float* out);

// SwiGLU MLP: down(silu(gate(x)) * up(x)).
void mlp_block(const mlp_weights& w, const float* x, int tokens, float* out);

// Sparse MoE: router softmax and top-k per token here, the experts through `experts`.
status moe_block(const layer_weights& w, const model_config& c, const float* x, int tokens,
               expert_executor& experts, int layer, float* out);

}  // namespace troupe
