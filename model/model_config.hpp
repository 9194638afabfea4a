#pragma once
// The shape of a model, read from a Hugging Face checkpoint's config.json (and
// generation_config.json for extra eos ids): qwen3_moe, and qwen3_5_moe (Qwen3.5/3.6-MoE,
// whose text part sits in text_config) or its text-only form qwen3_5_moe_text.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace troupe {

enum class architecture : uint8_t {
  qwen3_moe,    // every layer full attention; dense or MoE MLPs
  qwen3_5_moe,  // Gated DeltaNet and gated full-attention layers, MoE with a shared expert
};

enum class layer_kind : uint8_t { full_attention, linear_attention };

struct model_config {
  std::string model_type;
  architecture arch = architecture::qwen3_moe;
  int vocab_size = 0;
  int hidden_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int num_experts = 0;
  int num_experts_per_tok = 0;
  int moe_intermediate_size = 0;
  int intermediate_size = 0;
  int decoder_sparse_step = 1;
  std::vector<int> mlp_only_layers;
  bool norm_topk_prob = false;
  bool attention_bias = false;
  bool tie_word_embeddings = false;
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-6;
  int max_position_embeddings = 0;
  std::vector<int> eos_token_ids;

  // Per layer: full attention or Gated DeltaNet (all full attention for qwen3_moe; a
  // config built by hand may leave it empty, which means the same).
  std::vector<layer_kind> layer_types;
  // How many leading dims of each attention head rotate (partial_rotary_factor); 0: all.
  int rotary_dim = 0;
  // qwen3_5_moe: Gated DeltaNet shape, and the shared expert next to the routed ones.
  int linear_num_key_heads = 0;
  int linear_num_value_heads = 0;
  int linear_key_head_dim = 0;
  int linear_value_head_dim = 0;
  int linear_conv_kernel_dim = 0;
  int shared_expert_intermediate_size = 0;

  // Whether layer `i` uses the sparse MoE block (else a dense SwiGLU MLP), by the rule
  // transformers' Qwen3MoeDecoderLayer applies.
  bool is_moe_layer(int i) const;
  bool is_linear_layer(int i) const {
    return size_t(i) < layer_types.size() && layer_types[size_t(i)] == layer_kind::linear_attention;
  }
  bool has_linear_layers() const;
  // Channels of a Gated DeltaNet layer's causal conv: queries, keys, values.
  int linear_conv_dim() const {
    return 2 * linear_num_key_heads * linear_key_head_dim + linear_num_value_heads * linear_value_head_dim;
  }
};

// Parses config.json text; `source` names the file in error messages.
result<model_config> parse_model_config(std::string_view json_text, std::string_view source);

// Reads DIR/config.json and, when present, DIR/generation_config.json.
result<model_config> load_model_config(const std::filesystem::path& dir);

}  // namespace troupe
