#include "model/test_model.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "model/safetensors_writer.hpp"

namespace troupe {
namespace {

namespace fs = std::filesystem;

class random_bf16 {
 public:
  explicit random_bf16(uint64_t seed) : state_(seed * 0x9e3779b97f4a7c15ull + 1) {}

  tensor_to_write tensor(std::string name, std::vector<int64_t> shape, float bound, float center = 0.0f) {
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    tensor_to_write t{std::move(name), dtype::bf16, std::move(shape), {}};
    t.bytes.resize(size_t(count) * 2);
    for (int64_t i = 0; i < count; ++i) {
      const uint16_t v = f32_to_bf16(center + (2.0f * uniform() - 1.0f) * bound);
      t.bytes[size_t(2 * i)] = uint8_t(v & 0xff);
      t.bytes[size_t(2 * i + 1)] = uint8_t(v >> 8);
    }
    return t;
  }

 private:
  float uniform() {  // xorshift64*: fast and deterministic for a seed
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return float((state_ * 0x2545f4914f6cdd1dull) >> 40) / float(1 << 24);
  }
  uint64_t state_;
};

nlohmann::ordered_json config_json(const test_model_options& o) {
  return {{"architectures", {"Qwen3MoeForCausalLM"}},
          {"model_type", "qwen3_moe"},
          {"vocab_size", o.vocab},
          {"hidden_size", o.hidden},
          {"num_hidden_layers", o.layers},
          {"num_attention_heads", o.heads},
          {"num_key_value_heads", o.kv_heads},
          {"head_dim", o.head_dim},
          {"num_experts", o.experts},
          {"num_experts_per_tok", o.top_k},
          {"moe_intermediate_size", o.moe_intermediate},
          {"intermediate_size", o.intermediate},
          {"decoder_sparse_step", 1},
          {"mlp_only_layers", o.mlp_only_layers},
          {"norm_topk_prob", o.norm_topk_prob},
          {"attention_bias", false},
          {"hidden_act", "silu"},
          {"rms_norm_eps", 1e-6},
          {"rope_theta", 1000000.0},
          {"max_position_embeddings", o.max_position},
          {"tie_word_embeddings", false},
          {"bos_token_id", 151643},
          {"eos_token_id", 151645},
          {"torch_dtype", "bfloat16"}};
}

std::vector<tensor_to_write> make_tensors(const test_model_options& o) {
  random_bf16 rng(o.seed);
  const int64_t h = o.hidden, q = int64_t(o.heads) * o.head_dim, kv = int64_t(o.kv_heads) * o.head_dim;
  auto linear = [&](std::string name, int64_t out, int64_t in) {
    return rng.tensor(std::move(name), {out, in}, std::sqrt(3.0f / float(in)));
  };
  auto norm = [&](std::string name, int64_t n) { return rng.tensor(std::move(name), {n}, 0.2f, 1.0f); };
  std::vector<tensor_to_write> t;
  t.push_back(rng.tensor("model.embed_tokens.weight", {o.vocab, h}, 1.0f));
  for (int i = 0; i < o.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    t.push_back(norm(p + "input_layernorm.weight", h));
    t.push_back(linear(p + "self_attn.q_proj.weight", q, h));
    t.push_back(linear(p + "self_attn.k_proj.weight", kv, h));
    t.push_back(linear(p + "self_attn.v_proj.weight", kv, h));
    t.push_back(linear(p + "self_attn.o_proj.weight", h, q));
    t.push_back(norm(p + "self_attn.q_norm.weight", o.head_dim));
    t.push_back(norm(p + "self_attn.k_norm.weight", o.head_dim));
    t.push_back(norm(p + "post_attention_layernorm.weight", h));
    const bool dense = std::find(o.mlp_only_layers.begin(), o.mlp_only_layers.end(), i) != o.mlp_only_layers.end();
    if (dense) {
      t.push_back(linear(p + "mlp.gate_proj.weight", o.intermediate, h));
      t.push_back(linear(p + "mlp.up_proj.weight", o.intermediate, h));
      t.push_back(linear(p + "mlp.down_proj.weight", h, o.intermediate));
      continue;
    }
    t.push_back(linear(p + "mlp.gate.weight", o.experts, h));
    for (int e = 0; e < o.experts; ++e) {
      const std::string ep = p + "mlp.experts." + std::to_string(e) + ".";
      t.push_back(linear(ep + "gate_proj.weight", o.moe_intermediate, h));
      t.push_back(linear(ep + "up_proj.weight", o.moe_intermediate, h));
      t.push_back(linear(ep + "down_proj.weight", h, o.moe_intermediate));
    }
  }
  t.push_back(norm("model.norm.weight", h));
  t.push_back(linear("lm_head.weight", o.vocab, h));
  return t;
}

status write_json(const fs::path& path, const nlohmann::ordered_json& j) {
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out.flush()) return error{path.string() + ": write failed"};
  return ok();
}

}  // namespace

status make_test_model(const fs::path& out, const test_model_options& o) {
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) return error{out.string() + ": cannot create: " + ec.message()};
  for (const char* name : {"tokenizer.json", "tokenizer_config.json"}) {
    if (o.tokenizer_dir.empty()) break;
    fs::copy_file(o.tokenizer_dir / name, out / name, fs::copy_options::overwrite_existing, ec);
    if (ec) return error{(o.tokenizer_dir / name).string() + ": cannot copy: " + ec.message()};
  }
  if (auto s = write_json(out / "config.json", config_json(o)); !s) return s;
  if (auto s =
          write_json(out / "generation_config.json", {{"bos_token_id", 151643}, {"eos_token_id", {151645, 151643}}});
      !s)
    return s;
  if (auto s = write_checkpoint(out, make_tensors(o), o.max_shard_bytes); !s) return s;
  std::ofstream readme(out / "README.md");
  readme << "# troupe demo model\n\nWritten by `troupe make-test-model`. Its weights are RANDOM: "
            "it has the shape and file layout of a Qwen3-MoE checkpoint and the real Qwen3 "
            "tokenizer, but its output is meaningless text. Use it to try the server and run "
            "tests, not to judge answers.\n";
  if (!readme.flush()) return error{(out / "README.md").string() + ": write failed"};
  return ok();
}

}  // namespace troupe
