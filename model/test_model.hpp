#pragma once
// `troupe make-test-model`: a random-weight qwen3_moe checkpoint in the Hub's own layout
// (config.json, generation_config.json, sharded bf16 safetensors with per-expert tensor
// names, and the real Qwen3 tokenizer files), for demos and tests.
#include <cstdint>
#include <filesystem>
#include <vector>

#include "base/result.hpp"

namespace troupe {

struct test_model_options {
  int layers = 4;
  int hidden = 128;
  int heads = 4;
  int kv_heads = 2;
  int head_dim = 32;
  int experts = 16;
  int top_k = 4;
  int moe_intermediate = 128;
  int intermediate = 256;
  int vocab = 151936;  // Qwen3's, so the bundled tokenizer fits
  int max_position = 4096;
  std::vector<int> mlp_only_layers;
  bool norm_topk_prob = true;
  uint64_t seed = 1;
  size_t max_shard_bytes = size_t(64) << 20;
  std::filesystem::path tokenizer_dir;  // holds tokenizer.json and tokenizer_config.json
};

status make_test_model(const std::filesystem::path& out, const test_model_options& options);

}  // namespace troupe
