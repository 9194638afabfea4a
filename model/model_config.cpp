#include "model/model_config.hpp"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/read_file.hpp"

namespace troupe {
namespace {

using json = nlohmann::json;

// Reads one field, reporting a missing required field or a wrong JSON type by name.
class field_reader {
 public:
  field_reader(const json& obj, std::string_view source) : obj_(obj), source_(source) {}

  template <class T>
  void required(const char* key, T& out) {
    if (!obj_.contains(key) || obj_[key].is_null()) {
      fail(std::string("missing required field \"") + key + "\"");
      return;
    }
    read(key, out);
  }
  template <class T>
  void optional(const char* key, T& out) {
    if (obj_.contains(key) && !obj_[key].is_null()) read(key, out);
  }
  bool has(const char* key) const { return obj_.contains(key) && !obj_[key].is_null(); }
  void fail(std::string what) {
    if (error_.empty()) error_ = std::string(source_) + ": " + std::move(what);
  }
  const std::string& error_text() const { return error_; }

 private:
  void read(const char* key, int& out) {
    const json& v = obj_[key];
    if (!v.is_number_integer()) return fail(std::string("field \"") + key + "\" must be an integer");
    out = v.get<int>();
  }
  void read(const char* key, double& out) {
    const json& v = obj_[key];
    if (!v.is_number()) return fail(std::string("field \"") + key + "\" must be a number");
    out = v.get<double>();
  }
  void read(const char* key, bool& out) {
    const json& v = obj_[key];
    if (!v.is_boolean()) return fail(std::string("field \"") + key + "\" must be true or false");
    out = v.get<bool>();
  }
  void read(const char* key, std::vector<int>& out) {
    const json& v = obj_[key];
    if (!v.is_array()) return fail(std::string("field \"") + key + "\" must be a list of integers");
    out.clear();
    for (const json& e : v) {
      if (!e.is_number_integer()) return fail(std::string("field \"") + key + "\" must be a list of integers");
      out.push_back(e.get<int>());
    }
  }
  void read(const char* key, std::vector<std::string>& out) {
    const json& v = obj_[key];
    if (!v.is_array()) return fail(std::string("field \"") + key + "\" must be a list of strings");
    out.clear();
    for (const json& e : v) {
      if (!e.is_string()) return fail(std::string("field \"") + key + "\" must be a list of strings");
      out.push_back(e.get<std::string>());
    }
  }
  void read(const char* key, std::string& out) {
    const json& v = obj_[key];
    if (!v.is_string()) return fail(std::string("field \"") + key + "\" must be a string");
    out = v.get<std::string>();
  }

  const json& obj_;
  std::string_view source_;
  std::string error_;
};

// eos_token_id may be one integer or a list of them.
void read_eos_ids(const json& obj, std::vector<int>& ids) {
  if (!obj.contains("eos_token_id")) return;
  const json& v = obj["eos_token_id"];
  auto add = [&](int id) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  };
  if (v.is_number_integer()) add(v.get<int>());
  if (v.is_array())
    for (const json& e : v)
      if (e.is_number_integer()) add(e.get<int>());
}

std::string validate(const model_config& c) {
  auto positive = [](int v) { return v > 0; };
  if (!positive(c.vocab_size)) return "vocab_size must be positive";
  if (!positive(c.hidden_size)) return "hidden_size must be positive";
  if (!positive(c.num_layers)) return "num_hidden_layers must be positive";
  if (!positive(c.num_heads)) return "num_attention_heads must be positive";
  if (!positive(c.num_kv_heads)) return "num_key_value_heads must be positive";
  if (c.num_heads % c.num_kv_heads != 0)
    return "num_attention_heads (" + std::to_string(c.num_heads) + ") must be a multiple of num_key_value_heads (" +
           std::to_string(c.num_kv_heads) + ")";
  if (!positive(c.head_dim) || c.head_dim % 2 != 0) return "head_dim must be positive and even";
  if (!positive(c.rotary_dim) || c.rotary_dim % 2 != 0 || c.rotary_dim > c.head_dim)
    return "partial_rotary_factor gives " + std::to_string(c.rotary_dim) + " rotary dims of head_dim " +
           std::to_string(c.head_dim) + "; they must be even, positive and at most head_dim";
  if (!positive(c.num_experts)) return "num_experts must be positive";
  if (c.num_experts_per_tok < 1 || c.num_experts_per_tok > c.num_experts)
    return "num_experts_per_tok must be between 1 and num_experts (" + std::to_string(c.num_experts) + ")";
  if (!positive(c.moe_intermediate_size)) return "moe_intermediate_size must be positive";
  if (!positive(c.decoder_sparse_step)) return "decoder_sparse_step must be positive";
  for (int l : c.mlp_only_layers)
    if (l < 0 || l >= c.num_layers)
      return "mlp_only_layers names layer " + std::to_string(l) + ", outside 0.." + std::to_string(c.num_layers - 1);
  for (int i = 0; i < c.num_layers; ++i)
    if (!c.is_moe_layer(i) && !positive(c.intermediate_size))
      return "layer " + std::to_string(i) + " is a dense MLP layer but intermediate_size is not set";
  if (!(c.rope_theta > 0)) return "rope_theta must be positive";
  if (!(c.rms_norm_eps > 0)) return "rms_norm_eps must be positive";
  if (!positive(c.max_position_embeddings)) return "max_position_embeddings must be positive";
  if (int(c.layer_types.size()) != c.num_layers)
    return "layer_types lists " + std::to_string(c.layer_types.size()) + " layers, num_hidden_layers is " +
           std::to_string(c.num_layers);
  if (c.arch == architecture::qwen3_5_moe) {
    const std::pair<int, const char*> sizes[] = {
        {c.linear_num_key_heads, "linear_num_key_heads"},
        {c.linear_num_value_heads, "linear_num_value_heads"},
        {c.linear_key_head_dim, "linear_key_head_dim"},
        {c.linear_value_head_dim, "linear_value_head_dim"},
        {c.linear_conv_kernel_dim, "linear_conv_kernel_dim"},
        {c.shared_expert_intermediate_size, "shared_expert_intermediate_size"}};
    for (auto [value, name] : sizes)
      if (!positive(value)) return std::string(name) + " must be positive";
    if (c.linear_num_value_heads % c.linear_num_key_heads != 0)
      return "linear_num_value_heads (" + std::to_string(c.linear_num_value_heads) +
             ") must be a multiple of linear_num_key_heads (" + std::to_string(c.linear_num_key_heads) + ")";
  }
  return {};
}

// RoPE settings: rope_theta at the top (older files) or in rope_parameters (transformers 5;
// older: rope_scaling), with partial_rotary_factor beside it. Only the default type.
void read_rope(field_reader& f, const json& obj, model_config& c, double& partial_rotary_factor) {
  f.optional("rope_theta", c.rope_theta);
  f.optional("partial_rotary_factor", partial_rotary_factor);
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    if (!f.has(key)) continue;
    if (!obj[key].is_object()) return f.fail(std::string("field \"") + key + "\" must be an object");
    field_reader rope(obj[key], "");
    std::string type = "default";
    if (rope.has("rope_type"))
      rope.required("rope_type", type);
    else
      rope.optional("type", type);
    rope.optional("rope_theta", c.rope_theta);
    rope.optional("partial_rotary_factor", partial_rotary_factor);
    if (!rope.error_text().empty()) return f.fail(std::string(key) + rope.error_text());
    if (type != "default")
      return f.fail(std::string(key) + ": RoPE type \"" + type + "\" is not supported (only default)");
    // Qwen3.5's mrope_section splits the rotary dims among time, height and width
    // positions; for text all three are the token's position, so it changes nothing.
  }
}

// The fields both families share, from the object that holds the text model's shape.
void read_common(field_reader& f, model_config& c) {
  f.required("vocab_size", c.vocab_size);
  f.required("hidden_size", c.hidden_size);
  f.required("num_hidden_layers", c.num_layers);
  f.required("num_attention_heads", c.num_heads);
  c.num_kv_heads = c.num_heads;
  f.optional("num_key_value_heads", c.num_kv_heads);
  if (c.num_heads > 0) c.head_dim = c.hidden_size / c.num_heads;
  f.optional("head_dim", c.head_dim);
  // Newer transformers write num_local_experts; older checkpoints num_experts.
  if (f.has("num_experts"))
    f.required("num_experts", c.num_experts);
  else
    f.required("num_local_experts", c.num_experts);
  f.required("num_experts_per_tok", c.num_experts_per_tok);
  f.required("moe_intermediate_size", c.moe_intermediate_size);
  f.optional("attention_bias", c.attention_bias);
  f.optional("tie_word_embeddings", c.tie_word_embeddings);
  f.optional("rms_norm_eps", c.rms_norm_eps);
  f.required("max_position_embeddings", c.max_position_embeddings);
}

void read_qwen3_moe(field_reader& f, const json& obj, model_config& c) {
  read_common(f, c);
  f.optional("intermediate_size", c.intermediate_size);
  f.optional("decoder_sparse_step", c.decoder_sparse_step);
  f.optional("mlp_only_layers", c.mlp_only_layers);
  f.optional("norm_topk_prob", c.norm_topk_prob);
  double partial_rotary_factor = 1.0;
  read_rope(f, obj, c, partial_rotary_factor);
  if (partial_rotary_factor != 1.0) f.fail("partial_rotary_factor is not supported for qwen3_moe");
  c.rotary_dim = c.head_dim;
  bool sliding_window = false;
  f.optional("use_sliding_window", sliding_window);
  if (sliding_window) f.fail("use_sliding_window is true; sliding-window attention is not supported");
  c.layer_types.assign(size_t(std::max(c.num_layers, 0)), layer_kind::full_attention);
}

// Qwen3.5-MoE's text model, as transformers' Qwen3_5MoeTextConfig reads it.
void read_qwen3_5_moe(field_reader& f, const json& obj, model_config& c) {
  read_common(f, c);
  f.required("linear_num_key_heads", c.linear_num_key_heads);
  f.required("linear_num_value_heads", c.linear_num_value_heads);
  f.required("linear_key_head_dim", c.linear_key_head_dim);
  f.required("linear_value_head_dim", c.linear_value_head_dim);
  f.required("linear_conv_kernel_dim", c.linear_conv_kernel_dim);
  f.required("shared_expert_intermediate_size", c.shared_expert_intermediate_size);
  c.norm_topk_prob = true;  // its router always renormalises the top k
  std::string act = "silu";
  f.optional("hidden_act", act);
  if (act != "silu") f.fail("hidden_act \"" + act + "\" is not supported (only silu)");
  double partial_rotary_factor = 0.25;  // transformers' default for this model
  read_rope(f, obj, c, partial_rotary_factor);
  if (!(partial_rotary_factor > 0 && partial_rotary_factor <= 1)) f.fail("partial_rotary_factor must be in (0, 1]");
  c.rotary_dim = int(c.head_dim * partial_rotary_factor);  // truncated, as transformers does
  std::vector<std::string> types;
  if (f.has("layer_types")) {
    f.required("layer_types", types);
  } else {  // as transformers builds it: every full_attention_interval-th layer is full attention
    int interval = 4;
    f.optional("full_attention_interval", interval);
    if (interval < 1) f.fail("full_attention_interval must be positive");
    for (int i = 0; i < c.num_layers && interval > 0; ++i)
      types.push_back((i + 1) % interval ? "linear_attention" : "full_attention");
  }
  for (const std::string& t : types) {
    if (t == "full_attention")
      c.layer_types.push_back(layer_kind::full_attention);
    else if (t == "linear_attention")
      c.layer_types.push_back(layer_kind::linear_attention);
    else
      return f.fail("layer_types: unknown layer type \"" + t + "\" (full_attention or linear_attention)");
  }
}

}  // namespace

bool model_config::is_moe_layer(int i) const {
  if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), i) != mlp_only_layers.end()) return false;
  return num_experts > 0 && (i + 1) % decoder_sparse_step == 0;
}

bool model_config::has_linear_layers() const {
  return std::find(layer_types.begin(), layer_types.end(), layer_kind::linear_attention) != layer_types.end();
}

result<model_config> parse_model_config(std::string_view json_text, std::string_view source) {
  json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return error{std::string(source) + ": not a JSON object"};

  model_config c;
  field_reader f(root, source);
  f.required("model_type", c.model_type);
  if (!f.error_text().empty()) return error{f.error_text()};
  std::string text_source = std::string(source);
  if (c.model_type == "qwen3_moe") {
    read_qwen3_moe(f, root, c);
  } else if (c.model_type == "qwen3_5_moe_text") {
    c.arch = architecture::qwen3_5_moe;
    read_qwen3_5_moe(f, root, c);
  } else if (c.model_type == "qwen3_5_moe") {
    // The text model's shape sits in text_config, next to the vision tower's.
    c.arch = architecture::qwen3_5_moe;
    if (!f.has("text_config") || !root["text_config"].is_object())
      return error{std::string(source) + ": model_type qwen3_5_moe needs a \"text_config\" object"};
    text_source += ": text_config";
    const json& text = root["text_config"];
    field_reader tf(text, text_source);
    read_qwen3_5_moe(tf, text, c);
    if (!tf.error_text().empty()) return error{tf.error_text()};
    // transformers ties through the top-level flag; a file where the two differ is ambiguous.
    bool tied = c.tie_word_embeddings;
    f.optional("tie_word_embeddings", tied);
    if (text.contains("tie_word_embeddings") && tied != c.tie_word_embeddings)
      f.fail("tie_word_embeddings differs between the top level and text_config");
    c.tie_word_embeddings = tied;
    read_eos_ids(text, c.eos_token_ids);
  } else {
    return error{std::string(source) + ": unknown architecture (model_type \"" + c.model_type +
                 "\"); troupe supports: qwen3_moe, qwen3_5_moe, qwen3_5_moe_text"};
  }
  read_eos_ids(root, c.eos_token_ids);
  if (!f.error_text().empty()) return error{f.error_text()};
  if (std::string bad = validate(c); !bad.empty()) return error{text_source + ": " + bad};
  return c;
}

result<model_config> load_model_config(const std::filesystem::path& dir) {
  auto path = dir / "config.json";
  auto text = read_text_file(path);
  if (!text) return text.err();
  auto config = parse_model_config(*text, path.string());
  if (!config) return config;
  auto gen_path = dir / "generation_config.json";
  if (std::filesystem::exists(gen_path)) {
    auto gen_text = read_text_file(gen_path);
    if (!gen_text) return gen_text.err();
    json gen = json::parse(*gen_text, nullptr, false);
    if (gen.is_discarded() || !gen.is_object()) return error{gen_path.string() + ": not a JSON object"};
    read_eos_ids(gen, config->eos_token_ids);
  }
  return config;
}

}  // namespace troupe
