#pragma once
// Every weight of a qwen3_moe model in GPU memory, bf16 (norms and biases fp32), laid out
// for the CUDA step: q/k/v fused into one [q + 2 kv, hidden] matrix per layer, and each
// MoE layer's experts as w13 [experts, 2 * inter, hidden] (gate rows, then up rows) and
// w2 [experts, hidden, inter].
#include <filesystem>
#include <memory>
#include <vector>

#include <cuda_bf16.h>

#include "base/result.hpp"
#include "model/cuda/device_arena.hpp"
#include "model/model_config.hpp"

namespace troupe {

struct gpu_layer_weights {
  const __nv_bfloat16* qkv = nullptr;
  const float* qkv_bias = nullptr;  // null unless attention_bias
  const __nv_bfloat16* o = nullptr;
  const float* o_bias = nullptr;
  const float *q_norm = nullptr, *k_norm = nullptr;
  const float *input_norm = nullptr, *post_attention_norm = nullptr;
  bool moe = false;
  const __nv_bfloat16* router = nullptr;                                    // MoE layers
  const __nv_bfloat16 *w13 = nullptr, *w2 = nullptr;                        // MoE layers
  const __nv_bfloat16 *gate = nullptr, *up = nullptr, *down = nullptr;    // dense layers
};

struct gpu_weights {
  model_config config;
  const __nv_bfloat16* embed = nullptr;
  const __nv_bfloat16* lm_head = nullptr;
  const float* final_norm = nullptr;
  std::vector<gpu_layer_weights> layers;
  device_arena memory = device_arena::measure();
};

// Reads DIR's config.json and safetensors straight into GPU memory (converting f32/f16 to
// bf16 on the way), or with `dummy` fills random weights on the GPU from the config alone.
// Shows progress per layer; errors name the tensor or say how much memory was missing.
result<std::shared_ptr<const gpu_weights>> load_gpu_weights(const std::filesystem::path& dir, bool dummy);

}  // namespace troupe
