#pragma once
// Every weight of a qwen3_moe or qwen3_5_moe model, as views into a memory-mapped
// checkpoint (or into random buffers for --load-format dummy). Small vectors (norms,
// biases, convolutions) become fp32; Qwen3.5's (1 + weight) norms are stored as 1 + weight,
// so every norm scales by its stored vector.
#include <cstdint>
#include <memory>
#include <vector>

#include "base/result.hpp"
#include "base/weight_view.hpp"
#include "model/model_config.hpp"
#include "model/safetensors.hpp"

namespace troupe {

struct mlp_weights {
  weight_view gate, up, down;  // gate/up: [inter, hidden]; down: [hidden, inter]
};

struct attention_weights {
  // q: [heads * head_dim, hidden], or with an output gate (qwen3_5_moe) [heads * 2 * head_dim,
  // hidden], each head's query dims followed by its gate's.
  weight_view q, k, v, o;
  std::vector<float> q_bias, k_bias, v_bias, o_bias;  // empty unless attention_bias
  std::vector<float> q_norm, k_norm;                  // [head_dim]
};

// A Gated DeltaNet layer (qwen3_5_moe's linear attention).
struct linear_attention_weights {
  weight_view in_qkv;                 // [conv_dim, hidden]: queries, keys, values before the conv
  weight_view in_z;                   // [value_heads * value_dim, hidden]: the output norm's gate
  weight_view in_b;                   // [value_heads, hidden]: beta = sigmoid(b)
  weight_view in_a;                   // [value_heads, hidden]: g = -exp(A_log) * softplus(a + dt_bias)
  weight_view out;                    // [hidden, value_heads * value_dim]
  std::vector<float> conv;            // [conv_dim, kernel]
  std::vector<float> neg_decay_rate;  // -exp(A_log), [value_heads]
  std::vector<float> dt_bias;         // [value_heads]
  std::vector<float> norm;            // [value_dim]
};

struct layer_weights {
  std::vector<float> input_norm, post_attention_norm;
  attention_weights attn;           // full-attention layers
  linear_attention_weights linear;  // linear-attention layers
  bool moe = false;
  weight_view router;                // [experts, hidden], MoE layers
  std::vector<mlp_weights> experts;  // MoE layers
  mlp_weights mlp;                   // dense layers
  mlp_weights shared_expert;         // MoE layers of qwen3_5_moe, with
  weight_view shared_expert_gate;    // [1, hidden]: its output scales by sigmoid(x . gate)
};

struct model_weights {
  weight_view embed, lm_head;
  std::vector<float> final_norm;
  std::vector<layer_weights> layers;
  std::shared_ptr<const void> storage;  // keeps the mapping or dummy buffers alive
};

// Binds every tensor the config needs; a missing tensor or a wrong shape is an error
// naming the tensor and its file. A Qwen3.5 checkpoint's vision tower (model.visual.*) and
// multi-token-prediction head (mtp.*) are skipped with a line on stderr each.
result<model_weights> load_weights(const model_config& config, std::shared_ptr<checkpoint> ckpt);

// Random bf16 weights of the config's shape, for benchmarks without weight files.
model_weights make_dummy_weights(const model_config& config, uint64_t seed);

}  // namespace troupe
