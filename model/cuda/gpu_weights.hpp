#pragma once
// Every weight of a qwen3_moe or qwen3_5_moe model in GPU memory, bf16 (norms, biases and
// the Gated DeltaNet's small vectors fp32), laid out for the CUDA step: q/k/v fused into
// one [q + 2 kv, hidden] matrix per full-attention layer (qwen3_5_moe's output gate rows
// after them: [q | k | v | gate], so output_gate reads its gate from the same row), a
// Gated DeltaNet layer's four in-projections stacked [qkv | z | b | a], and each MoE
// layer's experts as w13 [experts, 2 * inter, hidden] (gate rows, then up rows) and w2
// [experts, hidden, inter]. A shared expert as wide as the routed ones is one more expert
// there (see shared_expert_in_slot). A process may hold only part of the model (its
// weight_share): the pointers of what it lacks are null, and w13 and w2 start at its first
// expert.
#include <filesystem>
#include <memory>
#include <vector>

#include <cuda_bf16.h>

#include "base/result.hpp"
#include "model/cuda/device_arena.hpp"
#include "model/model_config.hpp"
#include "model/weight_share.hpp"

namespace troupe {

struct gpu_mlp {
  const __nv_bfloat16 *gate = nullptr, *up = nullptr, *down = nullptr;
};

// A Gated DeltaNet layer (linear_attention_weights on the GPU).
struct gpu_linear_attention {
  const __nv_bfloat16* in_proj = nullptr;                     // [linear_in_width, hidden]: qkv, z, b, a
  const __nv_bfloat16* out = nullptr;                         // [hidden, value_heads * value_dim]
  const float* conv = nullptr;                                // [conv_dim, kernel]
  const float *neg_decay_rate = nullptr, *dt_bias = nullptr;  // [value_heads]
  const float* norm = nullptr;                                // [value_dim]
};

struct gpu_layer_weights {
  bool linear = false;  // Gated DeltaNet (linear) or full attention (qkv ... k_norm)
  const __nv_bfloat16* qkv = nullptr;
  const float* qkv_bias = nullptr;  // null unless attention_bias
  const __nv_bfloat16* o = nullptr;
  const float* o_bias = nullptr;
  const float *q_norm = nullptr, *k_norm = nullptr;
  gpu_linear_attention linear_attn;
  const float *input_norm = nullptr, *post_attention_norm = nullptr;
  bool moe = false;
  const __nv_bfloat16* router = nullptr;              // MoE layers
  const __nv_bfloat16 *w13 = nullptr, *w2 = nullptr;  // MoE layers: experts [first_expert, last_expert)
  int first_expert = 0, last_expert = 0;
  gpu_mlp mlp;                                        // dense layers
  gpu_mlp shared_expert;                              // qwen3_5_moe's MoE layers, with
  const __nv_bfloat16* shared_expert_gate = nullptr;  // [1, hidden]
  bool shared_in_slot = false;                        // see shared_expert_in_slot
};

// Whether each MoE layer's shared expert is expert slot num_experts of w13 and w2 (its
// gate, up and down pointers point there) and its gate row num_experts of the router:
// so when its width is the routed experts', as in qwen3_5_moe's sizes, and the process
// holds every routed expert of the layer. The step then runs it in the routed experts'
// kernels as a pick of every token (route_top_k's shared expert), six launches fewer a
// layer.
bool shared_expert_in_slot(const model_config& c);
// A token's most picks in a MoE layer's slot, and the slot's experts: the routed ones, and
// the shared expert beside them where it is in the slot.
int slot_picks(const model_config& c);
int slot_experts(const model_config& c);

// Columns of a full-attention layer's fused qkv row, the output gate's included.
int qkv_width(const model_config& c);
// Columns of a Gated DeltaNet layer's stacked in-projection row: the conv's channels, z,
// then b and a (value_heads each).
int linear_in_width(const model_config& c);

// Expert `e`'s gate and up rows in l.w13 and its matrix in l.w2 (first_expert <= e <=
// last_expert: the end, for a range's bound).
const __nv_bfloat16* w13_of(const model_config& c, const gpu_layer_weights& l, int e);
const __nv_bfloat16* w2_of(const model_config& c, const gpu_layer_weights& l, int e);

// An error unless MoE layer l (number `layer`) holds the experts [first, last).
status holds_experts(const model_config& c, const gpu_layer_weights& l, int layer, int first, int last);

struct gpu_weights {
  model_config config;
  weight_share share;
  const __nv_bfloat16* embed = nullptr;
  const __nv_bfloat16* lm_head = nullptr;
  const float* final_norm = nullptr;
  std::vector<gpu_layer_weights> layers;
  device_arena memory = device_arena::measure();
};

// Reads DIR's config.json and safetensors straight into GPU memory (converting f32/f16 to
// bf16 on the way), or with `dummy` fills random weights on the GPU from the config alone
// (each weight the same whichever share of them a process holds). Only `share`'s weights
// are loaded. Shows progress per layer; errors name the tensor or say how much memory was
// missing.
result<std::shared_ptr<const gpu_weights>> load_gpu_weights(const std::filesystem::path& dir, bool dummy,
                                                            const weight_share& share = {});

}  // namespace troupe
