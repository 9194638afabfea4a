#pragma once
// Layer helpers shared by the MoE architectures: each takes normed activations
// [tokens, hidden] and writes the block's output [tokens, hidden] (residual not added).
#include "model/kv_cache.hpp"
#include "model/model_config.hpp"
#include "model/qwen3_moe_weights.hpp"

namespace troupe {

// Self-attention with per-head q/k RMSNorm and RoPE; appends this step's keys and values
// to `cache` at positions cache.length() onward (the caller advances the cache).
void attention_block(const attention_weights& w, const model_config& c, const float* x,
                     int tokens, kv_cache& cache, int layer, float* out);

// SwiGLU MLP: down(silu(gate(x)) * up(x)).
void mlp_block(const mlp_weights& w, const float* x, int tokens, float* out);

// Sparse MoE: router softmax, top-k experts per token, weighted sum of their SwiGLU
// outputs. Tokens are grouped by expert so each expert's weights are read once.
void moe_block(const layer_weights& w, const model_config& c, const float* x, int tokens,
               float* out);

}  // namespace troupe
