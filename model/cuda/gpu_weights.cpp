#include "model/cuda/gpu_weights.hpp"

#include <cmath>
#include <cstring>

#include "base/progress.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/fill_uniform.cuh"
#include "model/qwen3_moe_weights.hpp"
#include "model/safetensors.hpp"

namespace troupe {
namespace {

using bf16 = __nv_bfloat16;

// Where every tensor goes: the same walk measures the arena and then hands out pointers.
void carve(const model_config& c, device_arena& arena, gpu_weights& w) {
  const size_t h = size_t(c.hidden_size), q_dim = size_t(c.num_heads) * size_t(c.head_dim),
               kv_dim = size_t(c.num_kv_heads) * size_t(c.head_dim), e = size_t(c.num_experts),
               inter = size_t(c.moe_intermediate_size), dense = size_t(c.intermediate_size);
  w.embed = arena.take<bf16>(size_t(c.vocab_size) * h);
  w.lm_head = c.tie_word_embeddings ? w.embed : arena.take<bf16>(size_t(c.vocab_size) * h);
  w.final_norm = arena.take<float>(h);
  w.layers.assign(size_t(c.num_layers), {});
  for (int i = 0; i < c.num_layers; ++i) {
    gpu_layer_weights& l = w.layers[size_t(i)];
    l.qkv = arena.take<bf16>((q_dim + 2 * kv_dim) * h);
    l.o = arena.take<bf16>(h * q_dim);
    if (c.attention_bias) {
      l.qkv_bias = arena.take<float>(q_dim + 2 * kv_dim);
      l.o_bias = arena.take<float>(h);
    }
    l.q_norm = arena.take<float>(size_t(c.head_dim));
    l.k_norm = arena.take<float>(size_t(c.head_dim));
    l.input_norm = arena.take<float>(h);
    l.post_attention_norm = arena.take<float>(h);
    l.moe = c.is_moe_layer(i);
    if (l.moe) {
      l.router = arena.take<bf16>(e * h);
      l.w13 = arena.take<bf16>(e * 2 * inter * h);
      l.w2 = arena.take<bf16>(e * h * inter);
    } else {
      l.gate = arena.take<bf16>(dense * h);
      l.up = arena.take<bf16>(dense * h);
      l.down = arena.take<bf16>(h * dense);
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
    TROUPE_CUDA_CHECK(cudaMemcpyAsync(const_cast<float*>(to), v.data(), v.size() * sizeof(float),
                                      cudaMemcpyHostToDevice, stream_));
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

void upload_layer(const model_config& c, const layer_weights& from, const gpu_layer_weights& to, uploader& up) {
  const int64_t h = c.hidden_size, inter = c.moe_intermediate_size;
  const bf16* k_rows = to.qkv + from.attn.q.rows * h;
  up.matrix(from.attn.q, to.qkv);
  up.matrix(from.attn.k, k_rows);
  up.matrix(from.attn.v, k_rows + from.attn.k.rows * h);
  up.matrix(from.attn.o, to.o);
  if (c.attention_bias) {
    std::vector<float> qkv_bias = from.attn.q_bias;
    qkv_bias.insert(qkv_bias.end(), from.attn.k_bias.begin(), from.attn.k_bias.end());
    qkv_bias.insert(qkv_bias.end(), from.attn.v_bias.begin(), from.attn.v_bias.end());
    up.floats(qkv_bias, to.qkv_bias);
    up.floats(from.attn.o_bias, to.o_bias);
  }
  up.floats(from.attn.q_norm, to.q_norm);
  up.floats(from.attn.k_norm, to.k_norm);
  up.floats(from.input_norm, to.input_norm);
  up.floats(from.post_attention_norm, to.post_attention_norm);
  if (to.moe) {
    up.matrix(from.router, to.router);
    for (size_t e = 0; e < from.experts.size(); ++e) {
      const bf16* w13 = to.w13 + int64_t(e) * 2 * inter * h;
      up.matrix(from.experts[e].gate, w13);
      up.matrix(from.experts[e].up, w13 + inter * h);
      up.matrix(from.experts[e].down, to.w2 + int64_t(e) * h * inter);
    }
  } else {
    up.matrix(from.mlp.gate, to.gate);
    up.matrix(from.mlp.up, to.up);
    up.matrix(from.mlp.down, to.down);
  }
}

status upload(const std::filesystem::path& dir, const gpu_weights& w) {
  auto ckpt = checkpoint::open(dir);
  if (!ckpt) return ckpt.err();
  auto host = load_weights(w.config, std::make_shared<checkpoint>(std::move(*ckpt)));
  if (!host) return host.err();
  uploader up;
  up.matrix(host->embed, w.embed);
  if (!w.config.tie_word_embeddings) up.matrix(host->lm_head, w.lm_head);
  up.floats(host->final_norm, w.final_norm);
  progress shown("troupe: weights to the GPU, layer", w.config.num_layers);
  for (int i = 0; i < w.config.num_layers; ++i) {
    upload_layer(w.config, host->layers[size_t(i)], w.layers[size_t(i)], up);
    shown.update(i + 1);
  }
  up.finish();
  return ok();
}

// As make_dummy_weights: matrices uniform in +-1/sqrt(in_features), norms 1, biases 0.
void fill_dummy(const gpu_weights& w) {
  const model_config& c = w.config;
  uint64_t seed = 1;
  auto matrix = [&](const bf16* to, int64_t rows, int64_t cols) {
    cuda::fill_uniform(const_cast<bf16*>(to), rows * cols, 1.0f / std::sqrt(float(cols)), seed++ * 0x2545f4914f6cdd1dull, nullptr);
  };
  auto ones = [&](const float* to, int64_t n) {
    const std::vector<float> v(size_t(n), 1.0f);
    TROUPE_CUDA_CHECK(cudaMemcpy(const_cast<float*>(to), v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
  };
  const int64_t h = c.hidden_size, q_dim = int64_t(c.num_heads) * c.head_dim,
                kv_dim = int64_t(c.num_kv_heads) * c.head_dim, inter = c.moe_intermediate_size;
  matrix(w.embed, c.vocab_size, h);
  if (!c.tie_word_embeddings) matrix(w.lm_head, c.vocab_size, h);
  ones(w.final_norm, h);
  progress shown("troupe: random weights on the GPU, layer", c.num_layers);
  for (int i = 0; i < c.num_layers; ++i) {
    const gpu_layer_weights& l = w.layers[size_t(i)];
    matrix(l.qkv, q_dim + 2 * kv_dim, h);
    matrix(l.o, h, q_dim);
    if (l.qkv_bias != nullptr) {
      TROUPE_CUDA_CHECK(cudaMemset(const_cast<float*>(l.qkv_bias), 0, size_t(q_dim + 2 * kv_dim) * sizeof(float)));
      TROUPE_CUDA_CHECK(cudaMemset(const_cast<float*>(l.o_bias), 0, size_t(h) * sizeof(float)));
    }
    ones(l.q_norm, c.head_dim);
    ones(l.k_norm, c.head_dim);
    ones(l.input_norm, h);
    ones(l.post_attention_norm, h);
    if (l.moe) {
      matrix(l.router, c.num_experts, h);
      matrix(l.w13, int64_t(c.num_experts) * 2 * inter, h);
      matrix(l.w2, int64_t(c.num_experts) * h, inter);
    } else {
      matrix(l.gate, c.intermediate_size, h);
      matrix(l.up, c.intermediate_size, h);
      matrix(l.down, h, c.intermediate_size);
    }
    TROUPE_CUDA_CHECK(cudaDeviceSynchronize());
    shown.update(i + 1);
  }
}

// The CUDA kernels' limits: flash attention is built for head_dim 64 and 128 (as
// FlashAttention's common builds are), the MoE GEMMs for 16-element tiles, the router for
// at most 32 experts a token of at most 1024 (a lane each, and 32 a lane).
status check_gpu_shape(const model_config& c, const std::filesystem::path& dir) {
  std::string why;
  if (c.arch != architecture::qwen3_moe) why = "model_type " + c.model_type + " (its linear-attention kernels are not written yet)";
  else if (c.head_dim != 64 && c.head_dim != 128) why = "head_dim " + std::to_string(c.head_dim) + " (64 or 128 are built)";
  else if (c.hidden_size % 16 != 0) why = "hidden_size " + std::to_string(c.hidden_size) + " (a multiple of 16 is needed)";
  else if (c.num_experts > 0 && c.moe_intermediate_size % 16 != 0)
    why = "moe_intermediate_size " + std::to_string(c.moe_intermediate_size) + " (a multiple of 16 is needed)";
  else if (c.num_experts > 0 && c.num_experts_per_tok > 32)
    why = "num_experts_per_tok " + std::to_string(c.num_experts_per_tok) + " (at most 32 are built)";
  else if (c.num_experts > 1024)
    why = "num_experts " + std::to_string(c.num_experts) + " (at most 1024 are built)";
  if (why.empty()) return ok();
  return error{(dir / "config.json").string() + ": the CUDA backend cannot run " + why + "; use --device cpu"};
}

}  // namespace

result<std::shared_ptr<const gpu_weights>> load_gpu_weights(const std::filesystem::path& dir, bool dummy) {
  auto config = load_model_config(dir);
  if (!config) return config.err();
  if (auto s = check_gpu_shape(*config, dir); !s) return s.err();
  auto w = std::make_shared<gpu_weights>();
  w->config = std::move(*config);
  device_arena sizing = device_arena::measure();
  carve(w->config, sizing, *w);
  auto memory = device_arena::allocate(sizing.used(), "the model's weights");
  if (!memory) return memory.err();
  w->memory = std::move(*memory);
  carve(w->config, w->memory, *w);
  if (dummy) {
    fill_dummy(*w);
  } else if (auto s = upload(dir, *w); !s) {
    return s.err();
  }
  return std::shared_ptr<const gpu_weights>(std::move(w));
}

}  // namespace troupe
