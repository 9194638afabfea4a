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

// Qwen3.5-35B-A3B's config.json as published (vision_config shortened): the text model in
// text_config, every fourth layer full attention.
std::string qwen3_5_35b() {
  std::string types;
  for (int i = 0; i < 40; ++i)
    types += std::string(i ? ", " : "") + ((i + 1) % 4 ? "\"linear_attention\"" : "\"full_attention\"");
  return R"({
  "architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
  "image_token_id": 248056, "video_token_id": 248057, "tie_word_embeddings": false,
  "vision_config": {"model_type": "qwen3_5_moe", "depth": 27, "hidden_size": 1152, "out_hidden_size": 2048},
  "text_config": {
    "model_type": "qwen3_5_moe_text", "attention_bias": false, "attn_output_gate": true,
    "eos_token_id": 248044, "full_attention_interval": 4, "head_dim": 256, "hidden_act": "silu",
    "hidden_size": 2048, "layer_types": [)" +
         types + R"(],
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
    "linear_num_value_heads": 32, "linear_value_head_dim": 128, "max_position_embeddings": 262144,
    "moe_intermediate_size": 512, "mtp_num_hidden_layers": 1, "num_attention_heads": 16,
    "num_experts": 256, "num_experts_per_tok": 8, "num_hidden_layers": 40, "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06, "shared_expert_intermediate_size": 512, "tie_word_embeddings": false,
    "vocab_size": 248320,
    "rope_parameters": {"mrope_interleaved": true, "mrope_section": [11, 11, 10], "rope_type": "default",
                        "rope_theta": 10000000, "partial_rotary_factor": 0.25}}})";
}

// The same model as a text-only checkpoint (qwen3_5_moe_text at the top), in an older
// spelling: no layer_types, rope_theta and partial_rotary_factor at the top.
const char* qwen3_5_text_only = R"({
  "architectures": ["Qwen3_5MoeForCausalLM"], "model_type": "qwen3_5_moe_text",
  "eos_token_id": [248044, 248046], "head_dim": 128, "hidden_size": 1024, "num_hidden_layers": 6,
  "linear_conv_kernel_dim": 4, "linear_key_head_dim": 64, "linear_num_key_heads": 4,
  "linear_num_value_heads": 8, "linear_value_head_dim": 96, "max_position_embeddings": 4096,
  "moe_intermediate_size": 256, "num_attention_heads": 8, "num_experts": 64, "num_experts_per_tok": 4,
  "num_key_value_heads": 2, "shared_expert_intermediate_size": 384, "vocab_size": 1000,
  "tie_word_embeddings": true, "rope_theta": 1000000.0, "partial_rotary_factor": 0.5})";

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
      with(with(qwen3_30b, R"("num_experts": 128)", R"("num_local_experts": 64)"), R"("rope_theta": 1000000.0)",
           R"("rope_parameters": {"rope_type": "default", "rope_theta": 5000.0})"),
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
             "x/config.json: unknown architecture (model_type \"llama\"); troupe supports: qwen3_moe, "
             "qwen3_5_moe, qwen3_5_moe_text");
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
  BOOST_TEST(error_of(with(qwen3_30b, R"("attention_bias": false)",
                           R"("attention_bias": false, "use_sliding_window": true)")) ==
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

BOOST_AUTO_TEST_CASE(reads_qwen3_5_from_text_config) {
  auto c = parse_model_config(qwen3_5_35b(), "config.json");
  BOOST_REQUIRE_MESSAGE(c, (c ? "" : c.err().message));
  BOOST_TEST((c->arch == architecture::qwen3_5_moe));
  BOOST_TEST(c->vocab_size == 248320);
  BOOST_TEST(c->hidden_size == 2048);
  BOOST_TEST(c->num_layers == 40);
  BOOST_TEST(c->num_heads == 16);
  BOOST_TEST(c->num_kv_heads == 2);
  BOOST_TEST(c->head_dim == 256);
  BOOST_TEST(c->rotary_dim == 64);
  BOOST_TEST(c->rope_theta == 1e7);
  BOOST_TEST(c->num_experts == 256);
  BOOST_TEST(c->num_experts_per_tok == 8);
  BOOST_TEST(c->norm_topk_prob);
  BOOST_TEST(c->moe_intermediate_size == 512);
  BOOST_TEST(c->shared_expert_intermediate_size == 512);
  BOOST_TEST(c->linear_num_key_heads == 16);
  BOOST_TEST(c->linear_num_value_heads == 32);
  BOOST_TEST(c->linear_key_head_dim == 128);
  BOOST_TEST(c->linear_value_head_dim == 128);
  BOOST_TEST(c->linear_conv_kernel_dim == 4);
  BOOST_TEST(c->linear_conv_dim() == 2 * 16 * 128 + 32 * 128);
  BOOST_TEST(!c->tie_word_embeddings);
  BOOST_TEST(c->max_position_embeddings == 262144);
  BOOST_TEST(c->eos_token_ids == std::vector<int>{248044});
  BOOST_REQUIRE(c->layer_types.size() == 40u);
  for (int i = 0; i < 40; ++i) {
    BOOST_TEST_CONTEXT("layer " << i) BOOST_TEST(c->is_linear_layer(i) == ((i + 1) % 4 != 0));
    BOOST_TEST(c->is_moe_layer(i));
  }
  BOOST_TEST(c->has_linear_layers());
}

BOOST_AUTO_TEST_CASE(reads_a_text_only_qwen3_5_with_transformers_defaults) {
  auto c = parse_model_config(qwen3_5_text_only, "config.json");
  BOOST_REQUIRE_MESSAGE(c, (c ? "" : c.err().message));
  BOOST_TEST((c->arch == architecture::qwen3_5_moe));
  BOOST_TEST(c->rotary_dim == 64);
  BOOST_TEST(c->rope_theta == 1e6);
  BOOST_TEST(c->tie_word_embeddings);
  BOOST_TEST(c->linear_conv_dim() == 2 * 4 * 64 + 8 * 96);
  BOOST_TEST(c->eos_token_ids == (std::vector<int>{248044, 248046}));
  // Without layer_types every fourth layer is full attention, as transformers builds it.
  BOOST_REQUIRE(c->layer_types.size() == 6u);
  for (int i = 0; i < 6; ++i) BOOST_TEST(c->is_linear_layer(i) == (i != 3));
  // Without partial_rotary_factor anywhere, transformers' 0.25.
  auto quarter = parse_model_config(with(qwen3_5_text_only, R"(, "partial_rotary_factor": 0.5)", ""), "config.json");
  BOOST_REQUIRE(quarter);
  BOOST_TEST(quarter->rotary_dim == 32);
  auto interval = parse_model_config(
      with(qwen3_5_text_only, R"("head_dim": 128,)", R"("head_dim": 128, "full_attention_interval": 2,)"),
      "config.json");
  BOOST_REQUIRE(interval);
  for (int i = 0; i < 6; ++i) BOOST_TEST(interval->is_linear_layer(i) == (i % 2 == 0));
  // qwen3_moe has no linear layers.
  BOOST_TEST(!parse_model_config(qwen3_30b, "config.json")->has_linear_layers());
}

BOOST_AUTO_TEST_CASE(bad_qwen3_5_configs_get_errors_naming_the_field) {
  const std::string full = qwen3_5_35b();
  BOOST_TEST(error_of(with(full, R"("text_config": {)", R"("text_configs": {)")) ==
             "x/config.json: model_type qwen3_5_moe needs a \"text_config\" object");
  BOOST_TEST(error_of(with(full, R"("linear_num_key_heads": 16,)", "")) ==
             "x/config.json: text_config: missing required field \"linear_num_key_heads\"");
  BOOST_TEST(error_of(with(full, R"("shared_expert_intermediate_size": 512,)", "")) ==
             "x/config.json: text_config: missing required field \"shared_expert_intermediate_size\"");
  BOOST_TEST(error_of(with(full, R"("linear_num_value_heads": 32)", R"("linear_num_value_heads": 24)")) ==
             "x/config.json: text_config: linear_num_value_heads (24) must be a multiple of linear_num_key_heads (16)");
  BOOST_TEST(error_of(with(full, R"("linear_key_head_dim": 128)", R"("linear_key_head_dim": 0)")) ==
             "x/config.json: text_config: linear_key_head_dim must be positive");
  BOOST_TEST(error_of(with(full, R"("num_hidden_layers": 40)", R"("num_hidden_layers": 48)")) ==
             "x/config.json: text_config: layer_types lists 40 layers, num_hidden_layers is 48");
  BOOST_TEST(error_of(with(full, R"(["linear_attention", )", R"(["sliding_attention", )")) ==
             "x/config.json: text_config: layer_types: unknown layer type \"sliding_attention\" (full_attention or "
             "linear_attention)");
  BOOST_TEST(error_of(with(full, R"("hidden_act": "silu")", R"("hidden_act": "gelu")")) ==
             "x/config.json: text_config: hidden_act \"gelu\" is not supported (only silu)");
  BOOST_TEST(error_of(with(full, R"("partial_rotary_factor": 0.25)", R"("partial_rotary_factor": 1.5)")) ==
             "x/config.json: text_config: partial_rotary_factor must be in (0, 1]");
  BOOST_TEST(error_of(with(full, R"("partial_rotary_factor": 0.25)", R"("partial_rotary_factor": 0.005)")) ==
             "x/config.json: text_config: partial_rotary_factor gives 1 rotary dims of head_dim 256; they must be "
             "even, positive and at most head_dim");
  BOOST_TEST(error_of(with(full, R"("rope_type": "default")", R"("rope_type": "yarn")")) ==
             "x/config.json: text_config: rope_parameters: RoPE type \"yarn\" is not supported (only default)");
  BOOST_TEST(error_of(with(full, R"("tie_word_embeddings": false,
  "vision_config")",
                           R"("tie_word_embeddings": true,
  "vision_config")")) == "x/config.json: tie_word_embeddings differs between the top level and text_config");
  BOOST_TEST(error_of(with(qwen3_30b, R"("rope_theta": 1000000.0)",
                           R"("rope_theta": 1000000.0, "partial_rotary_factor": 0.5)")) ==
             "x/config.json: partial_rotary_factor is not supported for qwen3_moe");
}
