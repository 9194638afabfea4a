#define BOOST_TEST_MODULE model_config
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>

#include "model/model_config.hpp"

using namespace troupe;

namespace {

// The fields of Qwen3-30B-A3B's config.json as published.
const char* qwen3_30b = R"({
  "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
  "vocab_size": 151936, "hidden_size": 2048, "num_hidden_layers": 48,
  "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
  "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768,
  "intermediate_size": 6144, "decoder_sparse_step": 1, "mlp_only_layers": [],
  "norm_topk_prob": true, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06,
  "tie_word_embeddings": false, "max_position_embeddings": 40960,
  "bos_token_id": 151643, "eos_token_id": 151645, "attention_bias": false})";

std::string with(std::string base, const std::string& from, const std::string& to) {
  auto at = base.find(from);
  BOOST_REQUIRE(at != std::string::npos);
  return base.replace(at, from.size(), to);
}

std::string error_of(const std::string& text) {
  auto c = parse_model_config(text, "x/config.json");
  BOOST_REQUIRE(!c);
  return c.err().message;
}

}  // namespace

BOOST_AUTO_TEST_CASE(reads_every_field_of_qwen3_30b) {
  auto c = parse_model_config(qwen3_30b, "config.json");
  BOOST_REQUIRE(c);
  BOOST_TEST(c->vocab_size == 151936);
  BOOST_TEST(c->hidden_size == 2048);
  BOOST_TEST(c->num_layers == 48);
  BOOST_TEST(c->num_heads == 32);
  BOOST_TEST(c->num_kv_heads == 4);
  BOOST_TEST(c->head_dim == 128);
  BOOST_TEST(c->num_experts == 128);
  BOOST_TEST(c->num_experts_per_tok == 8);
  BOOST_TEST(c->moe_intermediate_size == 768);
  BOOST_TEST(c->intermediate_size == 6144);
  BOOST_TEST(c->norm_topk_prob);
  BOOST_TEST(c->rope_theta == 1e6);
  BOOST_TEST(c->rms_norm_eps == 1e-6);
  BOOST_TEST(!c->tie_word_embeddings);
  BOOST_TEST(c->max_position_embeddings == 40960);
  BOOST_TEST(c->eos_token_ids == std::vector<int>{151645});
  BOOST_TEST(c->is_moe_layer(0));
  BOOST_TEST(c->is_moe_layer(47));
}

BOOST_AUTO_TEST_CASE(accepts_newer_spellings) {
  auto c = parse_model_config(
      with(with(qwen3_30b, R"("num_experts": 128)", R"("num_local_experts": 64)"),
           R"("rope_theta": 1000000.0)", R"("rope_parameters": {"rope_type": "default", "rope_theta": 5000.0})"),
      "config.json");
  BOOST_REQUIRE(c);
  BOOST_TEST(c->num_experts == 64);
  BOOST_TEST(c->rope_theta == 5000.0);
}

BOOST_AUTO_TEST_CASE(dense_layers_follow_mlp_only_layers_and_sparse_step) {
  auto c = parse_model_config(with(with(qwen3_30b, R"("mlp_only_layers": [])", R"("mlp_only_layers": [0, 5])"),
                                   R"("decoder_sparse_step": 1)", R"("decoder_sparse_step": 2)"),
                              "config.json");
  BOOST_REQUIRE(c);
  BOOST_TEST(!c->is_moe_layer(0));
  BOOST_TEST(c->is_moe_layer(1));
  BOOST_TEST(!c->is_moe_layer(2));
  BOOST_TEST(c->is_moe_layer(3));
  BOOST_TEST(!c->is_moe_layer(5));
}

BOOST_AUTO_TEST_CASE(head_dim_and_kv_heads_default_like_transformers) {
  auto c = parse_model_config(with(with(qwen3_30b, R"("head_dim": 128,)", ""), R"("num_key_value_heads": 4,)", ""),
                              "config.json");
  BOOST_REQUIRE(c);
  BOOST_TEST(c->head_dim == 64);
  BOOST_TEST(c->num_kv_heads == 32);
}

BOOST_AUTO_TEST_CASE(bad_configs_get_errors_naming_the_file_and_field) {
  BOOST_TEST(error_of("{") == "x/config.json: not a JSON object");
  BOOST_TEST(error_of(with(qwen3_30b, R"("model_type": "qwen3_moe")", R"("model_type": "llama")")) ==
             "x/config.json: unknown architecture (model_type \"llama\"); troupe supports: qwen3_moe");
  BOOST_TEST(error_of(with(qwen3_30b, R"("hidden_size": 2048,)", "")) ==
             "x/config.json: missing required field \"hidden_size\"");
  BOOST_TEST(error_of(with(qwen3_30b, R"("hidden_size": 2048)", R"("hidden_size": "big")")) ==
             "x/config.json: field \"hidden_size\" must be an integer");
  BOOST_TEST(error_of(with(qwen3_30b, R"("num_key_value_heads": 4)", R"("num_key_value_heads": 5)")) ==
             "x/config.json: num_attention_heads (32) must be a multiple of num_key_value_heads (5)");
  BOOST_TEST(error_of(with(qwen3_30b, R"("num_experts_per_tok": 8)", R"("num_experts_per_tok": 200)")) ==
             "x/config.json: num_experts_per_tok must be between 1 and num_experts (128)");
  BOOST_TEST(error_of(with(qwen3_30b, R"("mlp_only_layers": [])", R"("mlp_only_layers": [48])")) ==
             "x/config.json: mlp_only_layers names layer 48, outside 0..47");
  BOOST_TEST(error_of(with(qwen3_30b, R"("rope_theta": 1000000.0)",
                           R"("rope_scaling": {"rope_type": "yarn", "factor": 4.0})")) ==
             "x/config.json: rope_scaling: RoPE type \"yarn\" is not supported (only default)");
  BOOST_TEST(error_of(with(qwen3_30b, R"("attention_bias": false)", R"("attention_bias": false, "use_sliding_window": true)")) ==
             "x/config.json: use_sliding_window is true; sliding-window attention is not supported");
}

BOOST_AUTO_TEST_CASE(eos_ids_merge_config_and_generation_config) {
  auto dir = std::filesystem::temp_directory_path() / "troupe_config_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << qwen3_30b;
  std::ofstream(dir / "generation_config.json") << R"({"eos_token_id": [151645, 151643]})";
  auto c = load_model_config(dir);
  BOOST_REQUIRE(c);
  BOOST_TEST(c->eos_token_ids == (std::vector<int>{151645, 151643}));
  std::ofstream(dir / "generation_config.json") << "not json";
  BOOST_TEST(!load_model_config(dir));
  std::filesystem::remove_all(dir);
  auto missing = load_model_config(dir);
  BOOST_REQUIRE(!missing);
  BOOST_TEST(missing.err().message.find("config.json: cannot open") != std::string::npos);
}
