#include "model/cuda/gpu_weights.hpp"

#include <cmath>
#include <cstring>
#include <tuple>

#include "base/progress.hpp"
#include "kernels/cuda/causal_conv1d.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/fill_uniform.cuh"
#include "kernels/cuda/gated_delta_rule.cuh"
#include "model/qwen3_moe_weights.hpp"
#include "model/safetensors.hpp"

namespace troupe {
namespace {

using bf16 = __nv_bfloat16;

// Whether MoE layer l's shared expert goes in its experts' slot (shared_expert_in_slot),
// given whether the process holds the layer.
bool in_slot(const model_config& c, const gpu_layer_weights& l, bool holds_layer) {
  return shared_expert_in_slot(c) && holds_layer && l.first_expert == 0 && l.last_expert == c.num_experts;
}

// Where every tensor of the share goes: the same walk measures the arena and then hands
// out pointers.
void carve(const model_config& c, const weight_share& share, device_arena& arena, gpu_weights& w) {
  const size_t h = size_t(c.hidden_size), q_dim = size_t(c.num_heads) * size_t(c.head_dim), e = size_t(c.num_experts),
               inter = size_t(c.moe_intermediate_size), dense = size_t(c.intermediate_size),
               shared = size_t(c.shared_expert_intermediate_size), value_heads = size_t(c.linear_num_value_heads),
               value_width = value_heads * size_t(c.linear_value_head_dim);
  auto mlp = [&](size_t width) {
    return gpu_mlp{arena.take<bf16>(width * h), arena.take<bf16>(width * h), arena.take<bf16>(h * width)};
  };
  w.embed = w.lm_head = nullptr;
  w.final_norm = nullptr;
  if (share.holds_embedding(c)) w.embed = arena.take<bf16>(size_t(c.vocab_size) * h);
  if (share.holds_lm_head(c)) {
    w.lm_head = c.tie_word_embeddings ? w.embed : arena.take<bf16>(size_t(c.vocab_size) * h);
    w.final_norm = arena.take<float>(h);
  }
  w.layers.assign(size_t(c.num_layers), {});
  for (int i = 0; i < c.num_layers; ++i) {
    gpu_layer_weights& l = w.layers[size_t(i)];
    l.linear = c.is_linear_layer(i);
    l.moe = c.is_moe_layer(i);
    std::tie(l.first_expert, l.last_expert) = share.experts_of(i, c);
    const size_t experts = size_t(l.last_expert - l.first_expert);
    if (experts > 0) {
      const size_t slots = experts + (in_slot(c, l, share.holds_layer(i)) ? 1 : 0);
      l.w13 = arena.take<bf16>(slots * 2 * inter * h);
      l.w2 = arena.take<bf16>(slots * h * inter);
    }
    if (!share.holds_layer(i)) continue;
    if (l.linear) {
      gpu_linear_attention& a = l.linear_attn;
      a.in_proj = arena.take<bf16>(size_t(linear_in_width(c)) * h);
      a.out = arena.take<bf16>(h * value_width);
      a.conv = arena.take<float>(size_t(c.linear_conv_dim()) * size_t(c.linear_conv_kernel_dim));
      a.neg_decay_rate = arena.take<float>(value_heads);
      a.dt_bias = arena.take<float>(value_heads);
      a.norm = arena.take<float>(size_t(c.linear_value_head_dim));
    } else {
      l.qkv = arena.take<bf16>(size_t(qkv_width(c)) * h);
      l.o = arena.take<bf16>(h * q_dim);
      if (c.attention_bias) {
        l.qkv_bias = arena.take<float>(size_t(qkv_width(c)));
        l.o_bias = arena.take<float>(h);
      }
      l.q_norm = arena.take<float>(size_t(c.head_dim));
      l.k_norm = arena.take<float>(size_t(c.head_dim));
    }
    l.input_norm = arena.take<float>(h);
    l.post_attention_norm = arena.take<float>(h);
    if (!l.moe) {
      l.mlp = mlp(dense);
    } else if (in_slot(c, l, true)) {
      l.shared_in_slot = true;
      l.router = arena.take<bf16>((e + 1) * h);
      l.shared_expert = {w13_of(c, l, c.num_experts), w13_of(c, l, c.num_experts) + inter * h,
                         w2_of(c, l, c.num_experts)};
      l.shared_expert_gate = l.router + e * h;
    } else {
      l.router = arena.take<bf16>(e * h);
      if (shared > 0) {
        l.shared_expert = mlp(shared);
        l.shared_expert_gate = arena.take<bf16>(h);
      }
    }
  }
}

// Host tensors to the device through two pinned staging buffers, converting to bf16 on
// the way: the CPU fills one while the other is in flight.
class uploader {
 public:
  uploader() {
    TROUPE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    for (auto& s : staging_) {
      TROUPE_CUDA_CHECK(cudaMallocHost(&s.host, chunk * sizeof(uint16_t)));
      TROUPE_CUDA_CHECK(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming));
    }
  }
  ~uploader() {
    cudaStreamSynchronize(stream_);
    for (auto& s : staging_) {
      cudaFreeHost(s.host);
      cudaEventDestroy(s.done);
    }
    cudaStreamDestroy(stream_);
  }

  void matrix(const weight_view& v, const bf16* to) {
    const size_t n = size_t(v.rows) * size_t(v.cols);
    for (size_t first = 0; first < n; first += chunk) {
      const size_t count = std::min(chunk, n - first);
      staging& s = staging_[next_++ % 2];
      TROUPE_CUDA_CHECK(cudaEventSynchronize(s.done));
      if (v.type == dtype::bf16) {
        std::memcpy(s.host, static_cast<const uint16_t*>(v.data) + first, count * sizeof(uint16_t));
      } else {
        for (size_t i = 0; i < count; ++i) s.host[i] = f32_to_bf16(load_as_f32(v.type, v.data, first + i));
      }
      TROUPE_CUDA_CHECK(cudaMemcpyAsync(const_cast<bf16*>(to) + first, s.host, count * sizeof(uint16_t),
                                        cudaMemcpyHostToDevice, stream_));
      TROUPE_CUDA_CHECK(cudaEventRecord(s.done, stream_));
    }
  }
  void floats(const std::vector<float>& v, const float* to) {
    TROUPE_CUDA_CHECK(
        cudaMemcpyAsync(const_cast<float*>(to), v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice, stream_));
    TROUPE_CUDA_CHECK(cudaStreamSynchronize(stream_));  // v is pageable and may go away
  }
  void finish() { TROUPE_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  static constexpr size_t chunk = size_t(32) << 20;  // elements
  struct staging {
    uint16_t* host = nullptr;
    cudaEvent_t done = nullptr;
  };
  cudaStream_t stream_ = nullptr;
  staging staging_[2];
  size_t next_ = 0;
};

// A gated q_proj's rows: each head's query dims, then its gate's (bind_attention's
// layout); the CUDA step wants every head's queries, then every head's gates.
std::pair<std::vector<float>, std::vector<float>> split_gate(const std::vector<float>& both, int64_t heads,
                                                             int64_t head_dim) {
  std::pair<std::vector<float>, std::vector<float>> out;
  for (int64_t j = 0; j < heads; ++j) {
    const auto head = both.begin() + 2 * j * head_dim;
    out.first.insert(out.first.end(), head, head + head_dim);
    out.second.insert(out.second.end(), head + head_dim, head + 2 * head_dim);
  }
  return out;
}

void upload_attention(const model_config& c, const attention_weights& from, const gpu_layer_weights& to, uploader& up) {
  const int64_t h = c.hidden_size, hd = c.head_dim, q_dim = int64_t(c.num_heads) * hd;
  const bool gated = c.arch == architecture::qwen3_5_moe;
  const bf16* k_rows = to.qkv + q_dim * h;
  const bf16* v_rows = k_rows + from.k.rows * h;
  const bf16* gate_rows = v_rows + from.v.rows * h;
  if (gated) {
    for (int64_t j = 0; j < c.num_heads; ++j) {
      up.matrix(from.q.slice_rows(2 * j * hd, hd), to.qkv + j * hd * h);
      up.matrix(from.q.slice_rows(2 * j * hd + hd, hd), gate_rows + j * hd * h);
    }
  } else {
    up.matrix(from.q, to.qkv);
  }
  up.matrix(from.k, k_rows);
  up.matrix(from.v, v_rows);
  up.matrix(from.o, to.o);
  if (c.attention_bias) {
    auto [q_bias, gate_bias] =
        gated ? split_gate(from.q_bias, c.num_heads, hd) : std::pair{from.q_bias, std::vector<float>{}};
    std::vector<float> qkv_bias = q_bias;
    qkv_bias.insert(qkv_bias.end(), from.k_bias.begin(), from.k_bias.end());
    qkv_bias.insert(qkv_bias.end(), from.v_bias.begin(), from.v_bias.end());
    qkv_bias.insert(qkv_bias.end(), gate_bias.begin(), gate_bias.end());
    up.floats(qkv_bias, to.qkv_bias);
    up.floats(from.o_bias, to.o_bias);
  }
  up.floats(from.q_norm, to.q_norm);
  up.floats(from.k_norm, to.k_norm);
}

void upload_linear_attention(const model_config& c, const linear_attention_weights& from,
                             const gpu_linear_attention& to, uploader& up) {
  const bf16* at = to.in_proj;
  for (const weight_view* part : {&from.in_qkv, &from.in_z, &from.in_b, &from.in_a}) {
    up.matrix(*part, at);
    at += part->rows * c.hidden_size;
  }
  up.matrix(from.out, to.out);
  up.floats(from.conv, to.conv);
  up.floats(from.neg_decay_rate, to.neg_decay_rate);
  up.floats(from.dt_bias, to.dt_bias);
  up.floats(from.norm, to.norm);
}

void upload_mlp(const mlp_weights& from, const gpu_mlp& to, uploader& up) {
  up.matrix(from.gate, to.gate);
  up.matrix(from.up, to.up);
  up.matrix(from.down, to.down);
}

void upload_layer(const model_config& c, const layer_weights& from, const gpu_layer_weights& to, uploader& up) {
  for (int e = to.first_expert; e < to.last_expert; ++e) {
    const mlp_weights& expert = from.experts[size_t(e)];
    up.matrix(expert.gate, w13_of(c, to, e));
    up.matrix(expert.up, w13_of(c, to, e) + int64_t(c.moe_intermediate_size) * c.hidden_size);
    up.matrix(expert.down, w2_of(c, to, e));
  }
  if (to.input_norm == nullptr) return;  // the layer is not in the share
  if (to.linear)
    upload_linear_attention(c, from.linear, to.linear_attn, up);
  else
    upload_attention(c, from.attn, to, up);
  up.floats(from.input_norm, to.input_norm);
  up.floats(from.post_attention_norm, to.post_attention_norm);
  if (to.moe) {
    up.matrix(from.router, to.router);
    if (to.shared_expert_gate != nullptr) {
      upload_mlp(from.shared_expert, to.shared_expert, up);
      up.matrix(from.shared_expert_gate, to.shared_expert_gate);
    }
  } else {
    upload_mlp(from.mlp, to.mlp, up);
  }
}

status upload(const std::filesystem::path& dir, const gpu_weights& w) {
  auto ckpt = checkpoint::open(dir);
  if (!ckpt) return ckpt.err();
  auto host = load_weights(w.config, std::make_shared<checkpoint>(std::move(*ckpt)));
  if (!host) return host.err();
  uploader up;
  if (w.embed != nullptr) up.matrix(host->embed, w.embed);
  if (w.lm_head != nullptr && !w.config.tie_word_embeddings) up.matrix(host->lm_head, w.lm_head);
  if (w.final_norm != nullptr) up.floats(host->final_norm, w.final_norm);
  progress shown("troupe: weights to the GPU, layer", w.config.num_layers);
  for (int i = 0; i < w.config.num_layers; ++i) {
    upload_layer(w.config, host->layers[size_t(i)], w.layers[size_t(i)], up);
    shown.update(i + 1);
  }
  up.finish();
  return ok();
}

// As make_dummy_weights: matrices uniform in +-1/sqrt(in_features), norms 1, biases 0, a
// Gated DeltaNet layer's decay rate -1 and its conv the mean of its window. Every matrix
// has a seed of its own, counted in the same walk whatever the share, so a weight is the
// same in every process that holds it.
void fill_dummy(const gpu_weights& w) {
  const model_config& c = w.config;
  uint64_t seed = 1;
  // Rows [first_row, first_row + rows) of a matrix of `cols` columns (null: not held).
  auto rows_of = [&](const bf16* to, int64_t first_row, int64_t rows, int64_t cols) {
    const uint64_t mine = seed++ * 0x2545f4914f6cdd1dull;
    if (to != nullptr)
      cuda::fill_uniform(const_cast<bf16*>(to), first_row * cols, rows * cols, 1.0f / std::sqrt(float(cols)), mine,
                         nullptr);
  };
  auto matrix = [&](const bf16* to, int64_t rows, int64_t cols) { rows_of(to, 0, rows, cols); };
  auto constant = [&](const float* to, int64_t n, float value) {
    if (to == nullptr) return;
    const std::vector<float> v(size_t(n), value);
    TROUPE_CUDA_CHECK(cudaMemcpy(const_cast<float*>(to), v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
  };
  auto mlp = [&](const gpu_mlp& m, int64_t width) {
    matrix(m.gate, width, c.hidden_size);
    matrix(m.up, width, c.hidden_size);
    matrix(m.down, c.hidden_size, width);
  };
  const int64_t h = c.hidden_size, q_dim = int64_t(c.num_heads) * c.head_dim, inter = c.moe_intermediate_size,
                value_heads = c.linear_num_value_heads;
  matrix(w.embed, c.vocab_size, h);
  if (!c.tie_word_embeddings) matrix(w.lm_head, c.vocab_size, h);
  constant(w.final_norm, h, 1.0f);
  progress shown("troupe: random weights on the GPU, layer", c.num_layers);
  for (int i = 0; i < c.num_layers; ++i) {
    const gpu_layer_weights& l = w.layers[size_t(i)];
    if (l.linear) {
      const gpu_linear_attention& a = l.linear_attn;
      matrix(a.in_proj, linear_in_width(c), h);
      matrix(a.out, h, value_heads * c.linear_value_head_dim);
      constant(a.conv, int64_t(c.linear_conv_dim()) * c.linear_conv_kernel_dim, 1.0f / float(c.linear_conv_kernel_dim));
      constant(a.neg_decay_rate, value_heads, -1.0f);
      constant(a.dt_bias, value_heads, 0.0f);
      constant(a.norm, c.linear_value_head_dim, 1.0f);
    } else {
      matrix(l.qkv, qkv_width(c), h);
      matrix(l.o, h, q_dim);
      if (c.attention_bias) {
        constant(l.qkv_bias, qkv_width(c), 0.0f);
        constant(l.o_bias, h, 0.0f);
      }
      constant(l.q_norm, c.head_dim, 1.0f);
      constant(l.k_norm, c.head_dim, 1.0f);
    }
    constant(l.input_norm, h, 1.0f);
    constant(l.post_attention_norm, h, 1.0f);
    if (l.moe) {
      // The held experts' rows of the whole layer's [experts * 2 * inter, hidden] and
      // [experts * hidden, inter] matrices.
      const int64_t held = l.last_expert - l.first_expert;
      matrix(l.router, c.num_experts, h);
      rows_of(l.w13, l.first_expert * 2 * inter, held * 2 * inter, h);
      rows_of(l.w2, l.first_expert * h, held * h, inter);
      if (c.shared_expert_intermediate_size > 0) {
        mlp(l.shared_expert, c.shared_expert_intermediate_size);
        matrix(l.shared_expert_gate, 1, h);
      }
    } else {
      mlp(l.mlp, c.intermediate_size);
    }
    TROUPE_CUDA_CHECK(cudaDeviceSynchronize());
    shown.update(i + 1);
  }
}

// The CUDA kernels' limits: attention is built for head_dim 64, 128 and 256 (as
// FlashAttention's common builds are), decode attention for at most 16 query heads a KV
// head, RoPE for rotated pairs, the MoE GEMMs for 16-element tiles, the router for at most
// 32 experts a token (a shared expert in a slot counts) of at most 1024 (a lane each, and
// 32 a lane), the Gated DeltaNet's conv for windows of at most 8 and its delta rule for key
// heads of at most 256 dims that value heads share evenly.
status check_gpu_shape(const model_config& c, const std::filesystem::path& dir) {
  std::string why;
  if (c.head_dim != 64 && c.head_dim != 128 && c.head_dim != 256)
    why = "head_dim " + std::to_string(c.head_dim) + " (64, 128 or 256 are built)";
  else if (c.num_heads % c.num_kv_heads != 0 || c.num_heads / c.num_kv_heads > 16)
    why = std::to_string(c.num_heads) + " query heads over " + std::to_string(c.num_kv_heads) +
          " KV heads (at most 16 a KV head, evenly, are built)";
  else if (c.rotary_dim % 2 != 0)
    why = "a rotary_dim of " + std::to_string(c.rotary_dim) +
          " (head_dim times partial_rotary_factor; even ones are built)";
  else if (c.hidden_size % 16 != 0)
    why = "hidden_size " + std::to_string(c.hidden_size) + " (a multiple of 16 is needed)";
  else if (c.num_experts > 0 && c.moe_intermediate_size % 16 != 0)
    why = "moe_intermediate_size " + std::to_string(c.moe_intermediate_size) + " (a multiple of 16 is needed)";
  else if (c.num_experts > 0 && slot_picks(c) > 32)
    why = "num_experts_per_tok " + std::to_string(c.num_experts_per_tok) +
          (shared_expert_in_slot(c) ? " beside a shared expert (at most 31 are built)" : " (at most 32 are built)");
  else if (c.num_experts > 1024)
    why = "num_experts " + std::to_string(c.num_experts) + " (at most 1024 are built)";
  else if (c.has_linear_layers() && (c.linear_conv_kernel_dim < 1 || c.linear_conv_kernel_dim > cuda::conv_max_kernel))
    why = "linear_conv_kernel_dim " + std::to_string(c.linear_conv_kernel_dim) + " (1 to 8 are built)";
  else if (c.has_linear_layers() && c.linear_key_head_dim > cuda::delta_rule_max_key_dim)
    why = "linear_key_head_dim " + std::to_string(c.linear_key_head_dim) + " (at most 256 are built)";
  else if (c.has_linear_layers() && c.linear_num_value_heads % c.linear_num_key_heads != 0)
    why = std::to_string(c.linear_num_value_heads) + " linear value heads over " +
          std::to_string(c.linear_num_key_heads) + " key heads (a multiple is needed)";
  if (why.empty()) return ok();
  return error{(dir / "config.json").string() + ": the CUDA backend cannot run " + why + "; use --device cpu"};
}

}  // namespace

bool shared_expert_in_slot(const model_config& c) {
  return c.shared_expert_intermediate_size > 0 && c.shared_expert_intermediate_size == c.moe_intermediate_size;
}

int slot_picks(const model_config& c) { return c.num_experts_per_tok + int(shared_expert_in_slot(c)); }

int slot_experts(const model_config& c) { return c.num_experts + int(shared_expert_in_slot(c)); }

int qkv_width(const model_config& c) {
  const int q_dim = c.num_heads * c.head_dim, kv_dim = c.num_kv_heads * c.head_dim;
  return q_dim + 2 * kv_dim + (c.arch == architecture::qwen3_5_moe ? q_dim : 0);  // the output gate's rows
}

int linear_in_width(const model_config& c) {
  return c.linear_conv_dim() + c.linear_num_value_heads * (c.linear_value_head_dim + 2);
}

const bf16* w13_of(const model_config& c, const gpu_layer_weights& l, int e) {
  return l.w13 + int64_t(e - l.first_expert) * 2 * c.moe_intermediate_size * c.hidden_size;
}

const bf16* w2_of(const model_config& c, const gpu_layer_weights& l, int e) {
  return l.w2 + int64_t(e - l.first_expert) * c.hidden_size * c.moe_intermediate_size;
}

status holds_experts(const model_config& c, const gpu_layer_weights& l, int layer, int first, int last) {
  if (l.first_expert <= first && last <= l.last_expert) return ok();
  const std::string held = l.first_expert == l.last_expert
                               ? "none"
                               : std::to_string(l.first_expert) + ".." + std::to_string(l.last_expert - 1);
  return error{"layer " + std::to_string(layer) + "'s experts " + std::to_string(first) + ".." +
               std::to_string(last - 1) + " are not among this process's weights (of its " +
               std::to_string(c.num_experts) + ", it holds " + held + ")"};
}

result<std::shared_ptr<const gpu_weights>> load_gpu_weights(const std::filesystem::path& dir, bool dummy,
                                                            const weight_share& share) {
  auto config = load_model_config(dir);
  if (!config) return config.err();
  if (auto s = check_gpu_shape(*config, dir); !s) return s.err();
  auto w = std::make_shared<gpu_weights>();
  w->config = std::move(*config);
  w->share = share;
  device_arena sizing = device_arena::measure();
  carve(w->config, share, sizing, *w);
  auto memory = device_arena::allocate(sizing.used(), "the model's weights (" + share.text() + ")");
  if (!memory) return memory.err();
  w->memory = std::move(*memory);
  carve(w->config, share, w->memory, *w);
  if (dummy) {
    fill_dummy(*w);
  } else if (auto s = upload(dir, *w); !s) {
    return s.err();
  }
  return std::shared_ptr<const gpu_weights>(std::move(w));
}

}  // namespace troupe
