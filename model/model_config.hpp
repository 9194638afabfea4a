#pragma once
// The shape of a qwen3_moe model, read from a Hugging Face checkpoint's config.json
// (and generation_config.json for extra eos ids).
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace troupe {

struct model_config {
  std::string model_type;
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

  // Whether layer `i` uses the sparse MoE block (else a dense SwiGLU MLP), by the rule
  // transformers' Qwen3MoeDecoderLayer applies.
  bool is_moe_layer(int i) const;
};

// Parses config.json text; `source` names the file in error messages.
result<model_config> parse_model_config(std::string_view json_text, std::string_view source);

// Reads DIR/config.json and, when present, DIR/generation_config.json.
result<model_config> load_model_config(const std::filesystem::path& dir);

}  // namespace troupe
