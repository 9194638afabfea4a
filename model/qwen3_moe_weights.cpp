#include "model/qwen3_moe_weights.hpp"

#include <cmath>
#include <cstdio>
#include <string>

#include "base/progress.hpp"

namespace troupe {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Looks tensors up by name and checks their shapes; remembers the first error.
class binder {
 public:
  explicit binder(const checkpoint& c) : c_(c) {}

  weight_view matrix(const std::string& name, int64_t rows, int64_t cols) {
    const tensor_entry* t = get(name, {rows, cols});
    if (!t) return {};
    return {t->type, rows, cols, t->data};
  }
  // One expert's slice [first_row, first_row + rows) of a fused [experts, R, cols] tensor.
  weight_view expert_slice(const std::string& name, int64_t experts, int64_t fused_rows, int64_t expert,
                           int64_t first_row, int64_t rows, int64_t cols) {
    const tensor_entry* t = get(name, {experts, fused_rows, cols});
    if (!t) return {};
    weight_view all{t->type, experts * fused_rows, cols, t->data};
    return all.slice_rows(expert * fused_rows + first_row, rows);
  }
  std::vector<float> vector(const std::string& name, int64_t n) { return values(name, {n}); }
  // Every value of a small tensor of any shape, as fp32.
  std::vector<float> values(const std::string& name, std::vector<int64_t> shape) {
    const tensor_entry* t = get(name, shape);
    std::vector<float> v;
    if (!t) return v;
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    v.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = load_as_f32(t->type, t->data, size_t(i));
    return v;
  }
  bool has(const std::string& name) const { return c_.find(name) != nullptr; }
  const std::string& error_text() const { return error_; }

 private:
  const tensor_entry* get(const std::string& name, std::vector<int64_t> shape) {
    if (!error_.empty()) return nullptr;
    const tensor_entry* t = c_.find(name);
    if (!t) {
      error_ = "checkpoint is missing tensor " + name;
      return nullptr;
    }
    if (t->shape != shape) {
      error_ = t->file + ": tensor " + name + " has shape " + shape_text(t->shape) + ", the config needs " +
               shape_text(shape);
      return nullptr;
    }
    return t;
  }
  const checkpoint& c_;
  std::string error_;
};

// A norm's scale: Qwen3.5 normalises by (1 + weight), the rest by weight.
std::vector<float> norm(binder& b, const model_config& c, const std::string& name, int64_t n) {
  std::vector<float> v = b.vector(name, n);
  if (c.arch == architecture::qwen3_5_moe)
    for (float& x : v) x += 1.0f;
  return v;
}

void bind_attention(binder& b, const model_config& c, const std::string& p, attention_weights& a) {
  const int64_t h = c.hidden_size, q_dim = int64_t(c.num_heads) * c.head_dim,
                kv_dim = int64_t(c.num_kv_heads) * c.head_dim;
  const int64_t q_rows = c.arch == architecture::qwen3_5_moe ? 2 * q_dim : q_dim;  // with the output gate
  a.q = b.matrix(p + "q_proj.weight", q_rows, h);
  a.k = b.matrix(p + "k_proj.weight", kv_dim, h);
  a.v = b.matrix(p + "v_proj.weight", kv_dim, h);
  a.o = b.matrix(p + "o_proj.weight", h, q_dim);
  if (c.attention_bias) {
    a.q_bias = b.vector(p + "q_proj.bias", q_rows);
    a.k_bias = b.vector(p + "k_proj.bias", kv_dim);
    a.v_bias = b.vector(p + "v_proj.bias", kv_dim);
    a.o_bias = b.vector(p + "o_proj.bias", h);
  }
  a.q_norm = norm(b, c, p + "q_norm.weight", c.head_dim);
  a.k_norm = norm(b, c, p + "k_norm.weight", c.head_dim);
}

void bind_linear_attention(binder& b, const model_config& c, const std::string& p, linear_attention_weights& l) {
  const int64_t h = c.hidden_size, conv = c.linear_conv_dim(), heads = c.linear_num_value_heads,
                value = heads * c.linear_value_head_dim;
  l.in_qkv = b.matrix(p + "in_proj_qkv.weight", conv, h);
  l.in_z = b.matrix(p + "in_proj_z.weight", value, h);
  l.in_b = b.matrix(p + "in_proj_b.weight", heads, h);
  l.in_a = b.matrix(p + "in_proj_a.weight", heads, h);
  l.out = b.matrix(p + "out_proj.weight", h, value);
  l.conv = b.values(p + "conv1d.weight", {conv, 1, c.linear_conv_kernel_dim});
  l.neg_decay_rate = b.vector(p + "A_log", heads);
  for (float& x : l.neg_decay_rate) x = -std::exp(x);
  l.dt_bias = b.vector(p + "dt_bias", heads);
  l.norm = b.vector(p + "norm.weight", c.linear_value_head_dim);
}

mlp_weights bind_mlp(binder& b, const std::string& p, int64_t hidden, int64_t inter) {
  return {b.matrix(p + "gate_proj.weight", inter, hidden), b.matrix(p + "up_proj.weight", inter, hidden),
          b.matrix(p + "down_proj.weight", hidden, inter)};
}

// Experts are stored per expert on the Hub (experts.N.gate_proj.weight) and fused by
// transformers 5 (experts.gate_up_proj [E, 2I, H], experts.down_proj [E, H, I]).
void bind_experts(binder& b, const model_config& c, const std::string& p, layer_weights& l) {
  const int64_t e_count = c.num_experts, h = c.hidden_size, inter = c.moe_intermediate_size;
  l.experts.resize(size_t(e_count));
  const bool fused = b.has(p + "experts.gate_up_proj");
  for (int64_t e = 0; e < e_count; ++e) {
    mlp_weights& m = l.experts[size_t(e)];
    if (fused) {
      m.gate = b.expert_slice(p + "experts.gate_up_proj", e_count, 2 * inter, e, 0, inter, h);
      m.up = b.expert_slice(p + "experts.gate_up_proj", e_count, 2 * inter, e, inter, inter, h);
      m.down = b.expert_slice(p + "experts.down_proj", e_count, h, e, 0, h, inter);
    } else {
      m = bind_mlp(b, p + "experts." + std::to_string(e) + ".", h, inter);
    }
  }
}

// Where the text model's tensors sit: under model.language_model. in a Qwen3.5 checkpoint
// that also holds the vision tower (transformers may save the text-only form so too),
// under model. otherwise.
std::string text_prefix(const checkpoint& ckpt) {
  return ckpt.find("model.language_model.embed_tokens.weight") ? "model.language_model." : "model.";
}

// One line for each group of tensors a text engine leaves alone.
void report_skipped(const checkpoint& ckpt) {
  int vision = 0, mtp = 0;
  for (const auto& [name, t] : ckpt.tensors()) {
    vision += name.starts_with("model.visual.");
    mtp += name.starts_with("mtp.");
  }
  if (vision)
    std::fprintf(stderr, "troupe: skipping the vision tower's %d tensors (model.visual.*): troupe serves text\n",
                 vision);
  if (mtp)
    std::fprintf(stderr,
                 "troupe: skipping the multi-token-prediction head's %d tensors (mtp.*): no speculative "
                 "decoding yet\n",
                 mtp);
}

}  // namespace

result<model_weights> load_weights(const model_config& c, std::shared_ptr<checkpoint> ckpt) {
  binder b(*ckpt);
  model_weights w;
  const int64_t h = c.hidden_size;
  const std::string text = text_prefix(*ckpt);
  report_skipped(*ckpt);
  w.embed = b.matrix(text + "embed_tokens.weight", c.vocab_size, h);
  w.lm_head = c.tie_word_embeddings ? w.embed : b.matrix("lm_head.weight", c.vocab_size, h);
  w.final_norm = norm(b, c, text + "norm.weight", h);
  w.layers.resize(size_t(c.num_layers));
  progress shown("troupe: binding weights, layer", c.num_layers);
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = text + "layers." + std::to_string(i) + ".";
    layer_weights& l = w.layers[size_t(i)];
    l.input_norm = norm(b, c, p + "input_layernorm.weight", h);
    l.post_attention_norm = norm(b, c, p + "post_attention_layernorm.weight", h);
    if (c.is_linear_layer(i))
      bind_linear_attention(b, c, p + "linear_attn.", l.linear);
    else
      bind_attention(b, c, p + "self_attn.", l.attn);
    l.moe = c.is_moe_layer(i);
    if (l.moe) {
      l.router = b.matrix(p + "mlp.gate.weight", c.num_experts, h);
      bind_experts(b, c, p + "mlp.", l);
      if (c.shared_expert_intermediate_size > 0) {
        l.shared_expert = bind_mlp(b, p + "mlp.shared_expert.", h, c.shared_expert_intermediate_size);
        l.shared_expert_gate = b.matrix(p + "mlp.shared_expert_gate.weight", 1, h);
      }
    } else {
      l.mlp = bind_mlp(b, p + "mlp.", h, c.intermediate_size);
    }
    shown.update(i + 1);
  }
  if (!b.error_text().empty()) return error{b.error_text()};
  w.storage = std::move(ckpt);
  return w;
}

namespace {

// Counter-based random numbers, so the parallel fill is reproducible for a seed.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct dummy_storage {
  std::vector<std::vector<uint16_t>> buffers;
};

class dummy_maker {
 public:
  dummy_maker(dummy_storage& s, uint64_t seed) : s_(s), seed_(seed) {}

  // Uniform in +-1/sqrt(cols): activations stay O(1) through the layers.
  weight_view matrix(int64_t rows, int64_t cols) {
    auto& buf = s_.buffers.emplace_back(size_t(rows * cols));
    const float bound = 1.0f / std::sqrt(float(cols));
    const uint64_t stream = mix(seed_ + s_.buffers.size());
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < rows * cols; ++i) {
      const float u = float(mix(stream ^ uint64_t(i)) >> 40) / float(1 << 24);
      buf[size_t(i)] = f32_to_bf16((2.0f * u - 1.0f) * bound);
    }
    return {dtype::bf16, rows, cols, buf.data()};
  }
  // fp32 values uniform in +-bound.
  std::vector<float> values(int64_t n, float bound) {
    const uint64_t stream = mix(seed_ ^ mix(++vectors_));
    std::vector<float> v(size_t(n), 0.0f);
    for (int64_t i = 0; i < n; ++i)
      v[size_t(i)] = (2.0f * float(mix(stream ^ uint64_t(i)) >> 40) / float(1 << 24) - 1.0f) * bound;
    return v;
  }

 private:
  dummy_storage& s_;
  uint64_t seed_;
  uint64_t vectors_ = 0;
};

}  // namespace

model_weights make_dummy_weights(const model_config& c, uint64_t seed) {
  auto storage = std::make_shared<dummy_storage>();
  dummy_maker make(*storage, seed);
  const int64_t h = c.hidden_size, q_dim = int64_t(c.num_heads) * c.head_dim,
                kv_dim = int64_t(c.num_kv_heads) * c.head_dim;
  model_weights w;
  w.embed = make.matrix(c.vocab_size, h);
  w.lm_head = c.tie_word_embeddings ? w.embed : make.matrix(c.vocab_size, h);
  w.final_norm.assign(size_t(h), 1.0f);
  w.layers.resize(size_t(c.num_layers));
  progress shown("troupe: random weights, layer", c.num_layers);
  for (int i = 0; i < c.num_layers; ++i) {
    layer_weights& l = w.layers[size_t(i)];
    l.input_norm.assign(size_t(h), 1.0f);
    l.post_attention_norm.assign(size_t(h), 1.0f);
    if (c.is_linear_layer(i)) {
      const int64_t conv = c.linear_conv_dim(), heads = c.linear_num_value_heads,
                    value = heads * c.linear_value_head_dim;
      linear_attention_weights& lin = l.linear;
      lin.in_qkv = make.matrix(conv, h);
      lin.in_z = make.matrix(value, h);
      lin.in_b = make.matrix(heads, h);
      lin.in_a = make.matrix(heads, h);
      lin.out = make.matrix(h, value);
      lin.conv = make.values(conv * c.linear_conv_kernel_dim, 1.0f / std::sqrt(float(c.linear_conv_kernel_dim)));
      lin.neg_decay_rate.assign(size_t(heads), -1.0f);
      lin.dt_bias.assign(size_t(heads), 0.0f);
      lin.norm.assign(size_t(c.linear_value_head_dim), 1.0f);
    } else {
      const int64_t q_rows = c.arch == architecture::qwen3_5_moe ? 2 * q_dim : q_dim;  // with the output gate
      l.attn.q = make.matrix(q_rows, h);
      l.attn.k = make.matrix(kv_dim, h);
      l.attn.v = make.matrix(kv_dim, h);
      l.attn.o = make.matrix(h, q_dim);
      if (c.attention_bias) {
        l.attn.q_bias.assign(size_t(q_rows), 0.0f);
        l.attn.k_bias.assign(size_t(kv_dim), 0.0f);
        l.attn.v_bias.assign(size_t(kv_dim), 0.0f);
        l.attn.o_bias.assign(size_t(h), 0.0f);
      }
      l.attn.q_norm.assign(size_t(c.head_dim), 1.0f);
      l.attn.k_norm.assign(size_t(c.head_dim), 1.0f);
    }
    l.moe = c.is_moe_layer(i);
    if (l.moe) {
      l.router = make.matrix(c.num_experts, h);
      for (int e = 0; e < c.num_experts; ++e)
        l.experts.push_back({make.matrix(c.moe_intermediate_size, h), make.matrix(c.moe_intermediate_size, h),
                             make.matrix(h, c.moe_intermediate_size)});
      if (const int64_t shared = c.shared_expert_intermediate_size; shared > 0) {
        l.shared_expert = {make.matrix(shared, h), make.matrix(shared, h), make.matrix(h, shared)};
        l.shared_expert_gate = make.matrix(1, h);
      }
    } else {
      l.mlp = {make.matrix(c.intermediate_size, h), make.matrix(c.intermediate_size, h),
               make.matrix(h, c.intermediate_size)};
    }
    shown.update(i + 1);
  }
  w.storage = std::move(storage);
  return w;
}

}  // namespace troupe
