#pragma once
// Layer helpers shared by the MoE architectures: each takes normed activations
// [tokens, hidden] of a whole batch and writes the block's output (residual not added).
#include <vector>

#include "model/expert_executor.hpp"
#include "model/forward_batch.hpp"
#include "model/kv_pool.hpp"
#include "model/model_config.hpp"
#include "model/qwen3_moe_weights.hpp"

namespace troupe {

// residual += block output.
void add_to(std::vector<float>& residual, const std::vector<float>& block_out);

// Self-attention with per-head q/k RMSNorm and RoPE (over the config's rotary dims).
// Stores each sequence's new keys and values in `kv` through its block table, then attends
// over all of its positions. With qwen3_5_moe's output gate, q_proj also yields a gate per
// head dim and the attention output is scaled by its sigmoid before o_proj.
void attention_block(const attention_weights& w, const model_config& c, const forward_batch& batch, const float* x,
                     kv_pool& kv, int layer, float* out);

// SwiGLU MLP: down(silu(gate(x)) * up(x)).
void mlp_block(const mlp_weights& w, const float* x, int tokens, float* out);

// Sparse MoE: router softmax and top-k per token here, the experts through `experts`.
status moe_block(const layer_weights& w, const model_config& c, const float* x, int tokens, expert_executor& experts,
                 int layer, float* out);

// qwen3_5_moe's shared expert: out += sigmoid(x . shared_expert_gate) * mlp(x), per token.
void shared_expert_block(const layer_weights& w, const float* x, int tokens, float* out);

}  // namespace troupe
