#pragma once
// Every weight of a qwen3_moe model, as views into a memory-mapped checkpoint (or into
// random buffers for --load-format dummy). Small vectors (norms, biases) become fp32.
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
  weight_view q, k, v, o;
  std::vector<float> q_bias, k_bias, v_bias, o_bias;  // empty unless attention_bias
  std::vector<float> q_norm, k_norm;                  // [head_dim]
};

struct layer_weights {
  std::vector<float> input_norm, post_attention_norm;
  attention_weights attn;
  bool moe = false;
  weight_view router;                // [experts, hidden], MoE layers
  std::vector<mlp_weights> experts;  // MoE layers
  mlp_weights mlp;                   // dense layers
};

struct model_weights {
  weight_view embed, lm_head;
  std::vector<float> final_norm;
  std::vector<layer_weights> layers;
  std::shared_ptr<const void> storage;  // keeps the mapping or dummy buffers alive
};

// Binds every tensor the config needs; a missing tensor or a wrong shape is an error
// naming the tensor and its file.
result<model_weights> load_weights(const model_config& config, std::shared_ptr<checkpoint> ckpt);

// Random bf16 weights of the config's shape, for benchmarks without weight files.
model_weights make_dummy_weights(const model_config& config, uint64_t seed);

}  // namespace troupe
