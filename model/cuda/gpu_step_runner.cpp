#include "model/cuda/gpu_step_runner.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <tuple>

#include "base/check.hpp"
#include "kernels/cuda/add_bias.cuh"
#include "kernels/cuda/causal_conv1d.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/flash_attention.cuh"
#include "kernels/cuda/gated_delta_rule.cuh"
#include "kernels/cuda/gated_delta_rule_chunked.cuh"
#include "kernels/cuda/gated_rms_norm.cuh"
#include "kernels/cuda/gather_rows.cuh"
#include "kernels/cuda/gemv.cuh"
#include "kernels/cuda/matmul.cuh"
#include "kernels/cuda/moe_combine_ranks.cuh"
#include "kernels/cuda/moe_routing.cuh"
#include "kernels/cuda/output_gate.cuh"
#include "kernels/cuda/paged_attention.cuh"
#include "kernels/cuda/qk_norm_rope.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/sampling.cuh"
#include "kernels/cuda/shared_expert_add.cuh"
#include "kernels/cuda/swiglu.cuh"

namespace troupe {
namespace {

using bf16 = __nv_bfloat16;
constexpr int max_top_logprobs = cuda::sampling_max_top_logprobs;
constexpr size_t cublas_workspace_bytes = size_t(32) << 20;

cuda::delta_rule_heads delta_rule_heads_of(const model_config& c) {
  return {c.linear_num_key_heads, c.linear_num_value_heads, c.linear_key_head_dim, c.linear_value_head_dim};
}

// Decode graphs are captured for these batch sizes; a batch runs in the smallest that holds it.
constexpr int batch_buckets[] = {1,  2,  4,   8,   12,  16,  24,  32,  40,  48,  56,  64,
                                 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512};

int batch_bucket(int seqs) {
  for (int b : batch_buckets)
    if (b >= seqs) return b;
  return 0;
}

// The decode attention grid covers a power of two of positions.
int context_bucket(int longest, int max_model_len) {
  int len = 256;
  while (len < longest) len *= 2;
  return std::min(len, max_model_len);
}

// A decode graph's capture, and a runner's making and unmaking, take turns in a process: its
// cudaFreeHost, cudaMallocHost and cuBLAS set-up reach beyond its own stream, and with
// pipeline stages on one GPU each in a thread of its own, a stage restarting beside another
// stage's capture invalidated that capture (test_gpu_engine on the H200, a crash).
std::mutex& capture_turns() {
  static std::mutex turns;
  return turns;
}

// The options' layer range, last_layer -1 resolved to the model's end.
std::pair<int, int> layer_range_of(const gpu_runner_options& o, const model_config& c) {
  return {o.first_layer, o.last_layer < 0 ? c.num_layers : o.last_layer};
}

}  // namespace

// Device memory of one runner: activations for the largest step, then the KV pool.
struct gpu_step_runner::buffers {
  // The residual stream: [0] for any step; a normalising gemv (decode sizes) writes the
  // updated stream to the other buffer, so [1] holds gemv rows.
  float* residual[2];
  bf16 *normed, *qkv, *q, *attn, *block_out;
  float* router_logits;
  int* chosen;
  float* route_weights;
  void* moe_workspace;
  bf16 *gate, *up;     // dense layers and shared experts
  bf16* shared_out;    // a shared expert's rows
  float* shared_gate;  // and its gate's logit, per token
  bf16* conv_out;      // Gated DeltaNet: the conv's rows [tokens, conv_dim]
  float* delta_sums;   // Gated DeltaNet: a prompt's chunk sums (gated_delta_rule_chunked)
  float* attn_workspace;
  bf16* rows;
  float* logits;
  void* sampling_workspace;
  void* cublas_workspace;
  // What comes back to the host: one contiguous span, copied in one transfer.
  char* outputs;
  size_t outputs_bytes;
  int *tokens, *top_ids;
  float *logprob, *top_logprobs;
  // Per layer of the stage, null where the layer is of the other kind: a full-attention
  // layer's KV pools [blocks, block_size, kv_heads, head_dim], a Gated DeltaNet layer's
  // state pools over max_num_seqs slots, conv [slots, kernel - 1, conv_dim] and delta rule
  // [slots, value_heads, key_dim, value_dim].
  std::vector<bf16*> keys, values;
  std::vector<float*> conv_states, delta_states;

  buffers(device_arena& a, const gpu_weights& w, const gpu_experts& experts, const gpu_runner_options& o,
          bool with_kv) {
    const model_config& c = w.config;
    const size_t t = size_t(o.max_num_batched_tokens), s = size_t(o.max_num_seqs), h = size_t(c.hidden_size);
    const size_t q_dim = size_t(c.num_heads) * size_t(c.head_dim), kv_dim = size_t(c.num_kv_heads) * size_t(c.head_dim);
    const size_t k = size_t(slot_picks(c));
    const auto [first, last] = layer_range_of(o, c);
    const auto any_layer = [&, first = first, last = last](auto is) {
      return std::any_of(w.layers.begin() + first, w.layers.begin() + last, is);
    };
    const bool linear = any_layer([](const gpu_layer_weights& l) { return l.linear; });
    const bool dense = any_layer([](const gpu_layer_weights& l) { return !l.moe; });
    const bool shared = any_layer([](const gpu_layer_weights& l) { return l.shared_expert_gate != nullptr; });
    const size_t value_width = size_t(c.linear_num_value_heads) * size_t(c.linear_value_head_dim);
    const size_t mlp_width =
        std::max(dense ? size_t(c.intermediate_size) : 0, shared ? size_t(c.shared_expert_intermediate_size) : 0);
    // Only the last stage computes logits and samples.
    const size_t sampled = last == c.num_layers ? s : 0;
    residual[0] = a.take<float>(t * h);
    residual[1] = a.take<float>(size_t(cuda::gemv_max_rows) * h);
    normed = a.take<bf16>(t * h);
    qkv = a.take<bf16>(t * std::max<size_t>(size_t(qkv_width(c)), linear ? size_t(linear_in_width(c)) : 0));
    q = a.take<bf16>(t * q_dim);
    attn = a.take<bf16>(t * std::max(q_dim, linear ? value_width : 0));
    block_out = a.take<bf16>(t * h);
    router_logits = a.take<float>(t * size_t(std::max(slot_experts(c), 1)));  // the shared expert's gate row too
    chosen = a.take<int>(t * std::max<size_t>(k, 1));
    route_weights = a.take<float>(t * std::max<size_t>(k, 1));
    moe_workspace = a.take<char>(c.num_experts > 0 ? experts.workspace_bytes(int(t)) : 0);
    gate = a.take<bf16>(t * mlp_width);
    up = a.take<bf16>(t * mlp_width);
    shared_out = a.take<bf16>(shared ? t * h : 0);
    shared_gate = a.take<float>(shared ? t : 0);
    conv_out = a.take<bf16>(linear ? t * size_t(c.linear_conv_dim()) : 0);
    delta_sums =
        a.take<float>(linear ? cuda::gated_delta_rule_chunked_workspace_floats(int(t), delta_rule_heads_of(c)) : 0);
    attn_workspace = a.take<float>(
        cuda::paged_attention_workspace_floats(int(s), c.num_heads, c.num_kv_heads, c.head_dim, o.max_model_len));
    rows = a.take<bf16>(sampled * h);
    logits = a.take<float>(sampled * size_t(c.vocab_size));
    sampling_workspace = a.take<char>(sampled > 0 ? cuda::sampling_workspace_bytes(int(s), c.vocab_size) : 0);
    cublas_workspace = a.take<char>(cublas_workspace_bytes);
    tokens = a.take<int>(s);
    outputs = reinterpret_cast<char*>(tokens);
    logprob = a.take<float>(s);
    top_ids = a.take<int>(s * max_top_logprobs);
    top_logprobs = a.take<float>(s * max_top_logprobs);
    outputs_bytes = size_t(reinterpret_cast<char*>(top_logprobs + s * max_top_logprobs) - outputs);
    if (!with_kv) return;
    const size_t pool = size_t(o.num_blocks) * size_t(o.block_size) * kv_dim;
    const size_t slots = size_t(o.max_num_seqs);
    const size_t conv_pool = slots * size_t(std::max(c.linear_conv_kernel_dim - 1, 0)) * size_t(c.linear_conv_dim());
    const size_t delta_pool = slots * value_width * size_t(c.linear_key_head_dim);
    for (int l = first; l < last; ++l) {
      const bool is_linear = w.layers[size_t(l)].linear;
      keys.push_back(is_linear ? nullptr : a.take<bf16>(pool));
      values.push_back(is_linear ? nullptr : a.take<bf16>(pool));
      conv_states.push_back(is_linear ? a.take<float>(conv_pool) : nullptr);
      delta_states.push_back(is_linear ? a.take<float>(delta_pool) : nullptr);
    }
  }
};

size_t gpu_step_runner::activation_bytes(const gpu_weights& weights, const gpu_experts& experts,
                                         const gpu_runner_options& options) {
  device_arena sizing = device_arena::measure();
  buffers(sizing, weights, experts, options, false);
  return sizing.used();
}

size_t gpu_step_runner::memory_bytes(const gpu_weights& weights, const gpu_experts& experts,
                                     const gpu_runner_options& options) {
  device_arena sizing = device_arena::measure();
  buffers(sizing, weights, experts, options, true);
  return sizing.used();
}

status gpu_step_runner::check_layer_range(int first, int last, int layers) {
  if (first >= 0 && first < last && last <= layers) return ok();
  return error{"a GPU stage of layers [" + std::to_string(first) + ", " + std::to_string(last) + ") in a model of " +
               std::to_string(layers)};
}

status gpu_step_runner::check_held(const gpu_weights& weights, int first, int last, bool experts_elsewhere) {
  const model_config& c = weights.config;
  const std::string stage = "a GPU stage of layers [" + std::to_string(first) + ", " + std::to_string(last) + ")";
  if (!weights.share.holds_layers(first, last))
    return error{stage + ": its weights are not among this process's (" + weights.share.text() + ")"};
  if (!experts_elsewhere)
    for (int i = first; i < last; ++i)
      if (c.is_moe_layer(i) && weights.share.experts_of(i, c) != std::pair{0, c.num_experts})
        return error{stage + " computes every expert of its layers, and this process holds " + weights.share.text()};
  return ok();
}

gpu_step_runner::gpu_step_runner(std::shared_ptr<const gpu_weights> weights, std::shared_ptr<gpu_experts> experts,
                                 const gpu_runner_options& options)
    : weights_(std::move(weights)), experts_(std::move(experts)), options_(options) {
  std::tie(first_, last_) = layer_range_of(options_, weights_->config);
  last_stage_ = last_ == weights_->config.num_layers;
}

result<std::unique_ptr<step_runner>> gpu_step_runner::create(std::shared_ptr<const gpu_weights> weights,
                                                             std::shared_ptr<gpu_experts> experts,
                                                             const gpu_runner_options& options,
                                                             std::shared_ptr<device_arena> memory,
                                                             std::shared_ptr<gpu_remote_experts> remote) {
  const auto [first, last] = layer_range_of(options, weights->config);
  if (auto inside = check_layer_range(first, last, weights->config.num_layers); !inside) return inside.err();
  if (auto held = check_held(*weights, first, last, remote != nullptr); !held) return held.err();
  const std::lock_guard turn(capture_turns());
  TROUPE_CUDA_CHECK(cudaSetDevice(options.device));
  std::unique_ptr<gpu_step_runner> r(new gpu_step_runner(std::move(weights), std::move(experts), options));
  r->remote_ = std::move(remote);
  if (memory == nullptr) {
    auto own = device_arena::allocate(memory_bytes(*r->weights_, *r->experts_, options),
                                      "the stage's activations and KV cache");
    if (!own) return own.err();
    memory = std::make_shared<device_arena>(std::move(*own));
  }
  memory->reset();
  r->memory_ = std::move(memory);
  r->buf_ = std::make_unique<buffers>(*r->memory_, *r->weights_, *r->experts_, options, true);
  // Decode graphs pad batches with rows that read block 0: zeros keep them finite.
  for (size_t l = 0; l < r->buf_->keys.size(); ++l) {
    if (r->buf_->keys[l] == nullptr) continue;  // a Gated DeltaNet layer: its states start afresh at position 0
    const size_t pool = size_t(options.num_blocks) * size_t(options.block_size) *
                        size_t(r->weights_->config.num_kv_heads) * size_t(r->weights_->config.head_dim);
    TROUPE_CUDA_CHECK(cudaMemset(r->buf_->keys[l], 0, pool * sizeof(bf16)));
    TROUPE_CUDA_CHECK(cudaMemset(r->buf_->values[l], 0, pool * sizeof(bf16)));
  }
  const step_capacity capacity{options.max_num_batched_tokens,
                               options.max_num_seqs,
                               (options.max_model_len + options.block_size - 1) / options.block_size,
                               options.block_size,
                               options.max_num_seqs * 8192,
                               (r->weights_->config.vocab_size + 63) / 64};
  r->inputs_ = std::make_unique<step_inputs>(capacity);
  if (r->last_stage_) TROUPE_CUDA_CHECK(cudaMallocHost(&r->outputs_host_, r->buf_->outputs_bytes));
  if (r->first_ > 0 || !r->last_stage_)
    TROUPE_CUDA_CHECK(cudaMallocHost(&r->hidden_host_, size_t(options.max_num_batched_tokens) *
                                                           size_t(r->weights_->config.hidden_size) * sizeof(float)));
  TROUPE_CUDA_CHECK(cudaStreamCreateWithFlags(&r->stream_, cudaStreamNonBlocking));
  TROUPE_CUDA_CHECK(cublasCreate(&r->cublas_));
  TROUPE_CUDA_CHECK(cublasSetStream(r->cublas_, r->stream_));
  // A workspace of its own keeps cuBLAS from allocating inside a graph capture.
  TROUPE_CUDA_CHECK(cublasSetWorkspace(r->cublas_, r->buf_->cublas_workspace, cublas_workspace_bytes));
  return std::unique_ptr<step_runner>(std::move(r));
}

gpu_step_runner::~gpu_step_runner() {
  const std::lock_guard turn(capture_turns());
  cudaSetDevice(options_.device);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  for (auto& [key, exec] : graphs_) cudaGraphExecDestroy(exec);
  if (cublas_ != nullptr) cublasDestroy(cublas_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  if (outputs_host_ != nullptr) cudaFreeHost(outputs_host_);
  if (hidden_host_ != nullptr) cudaFreeHost(hidden_host_);
}

status gpu_step_runner::forward(const shape& s) {
  const model_config& c = weights_->config;
  const gpu_weights& w = *weights_;
  buffers& b = *buf_;
  const step_inputs& in = *inputs_;
  const int n = s.tokens, h = c.hidden_size;
  const float eps = float(c.rms_norm_eps);

  // RMSNorm of the residual stream plus `add` into b.normed, then b.normed x `matrix`: at
  // decode sizes one gemv that normalises its input (no launch of its own; the stream
  // moves to the other residual buffer, and b.normed is written only when kept),
  // otherwise rms_norm in place and a matmul.
  int stream_at = 0;
  auto norm_matmul = [&](const bf16* add, const float* norm, const bf16* matrix, int out_dim, dtype y_type, void* y,
                         bool keep_normed) {
    if (cuda::gemv_normed_fits(n, h, matrix)) {
      cuda::gemv_normed(
          {add, b.residual[stream_at], norm, eps, b.residual[1 - stream_at], keep_normed ? b.normed : nullptr}, n, h,
          matrix, out_dim, y_type, y, stream_);
      stream_at = 1 - stream_at;
    } else {
      cuda::rms_norm(add, b.residual[stream_at], norm, eps, n, h, b.normed, stream_);
      cuda::matmul(cublas_, b.normed, n, h, matrix, out_dim, y_type, y);
    }
  };

  if (first_ == 0) cuda::embedding(w.embed, c.vocab_size, h, in.token_ids.device, n, b.residual[0], stream_);
  for (int i = first_; i < last_; ++i) {
    const gpu_layer_weights& l = w.layers[size_t(i)];
    const bf16* add = i == first_ ? nullptr : b.block_out;
    if (l.linear) {
      norm_matmul(add, l.input_norm, l.linear_attn.in_proj, linear_in_width(c), dtype::bf16, b.qkv, false);
      linear_attention(s, l.linear_attn, i);
    } else {
      norm_matmul(add, l.input_norm, l.qkv, qkv_width(c), dtype::bf16, b.qkv, false);
      full_attention(s, l, i);
    }
    if (l.moe) {
      // A shared expert in its slot is one more expert a token picks, unless the experts are
      // spread over GPUs (whose ranges hold the routed experts only).
      const bool shared_picked = l.shared_in_slot && !remote_;
      norm_matmul(b.block_out, l.post_attention_norm, l.router, c.num_experts + int(shared_picked), dtype::f32,
                  b.router_logits, true);
      cuda::route_top_k(b.router_logits, n, c.num_experts, c.num_experts_per_tok, c.norm_topk_prob, shared_picked,
                        b.chosen, b.route_weights, stream_);
      // A decode step is being captured: no handle, so fused_moe never waits for the stream.
      cublasHandle_t moe_cublas = s.decode ? nullptr : cublas_;
      if (auto r = remote_ ? moe_across_gpus(i, n)
                           : experts_->run(i, b.normed, n, c.num_experts_per_tok + int(shared_picked), b.chosen,
                                           b.route_weights, b.moe_workspace, b.block_out, stream_, moe_cublas);
          !r)
        return r;
      if (l.shared_expert_gate != nullptr && !shared_picked) shared_expert(l, n);
    } else {
      norm_matmul(b.block_out, l.post_attention_norm, l.mlp.gate, c.intermediate_size, dtype::bf16, b.gate, true);
      cuda::matmul(cublas_, b.normed, n, h, l.mlp.up, c.intermediate_size, dtype::bf16, b.up);
      cuda::swiglu(b.gate, b.up, int64_t(n) * c.intermediate_size, b.gate, stream_);
      cuda::matmul(cublas_, b.gate, n, c.intermediate_size, l.mlp.down, h, dtype::bf16, b.block_out);
    }
  }
  if (!last_stage_) {
    // The last block's output joins the stream as the next layer's norm would add it (the
    // same fp32 add, to the bit), so the next stage starts from the stream alone; the
    // norm's output is not used, so any norm weight the stage holds will do.
    cuda::rms_norm(b.block_out, b.residual[stream_at], w.layers[size_t(first_)].input_norm, eps, n, h, b.normed,
                   stream_);
    if (stream_at != 0)
      TROUPE_CUDA_CHECK(cudaMemcpyAsync(b.residual[0], b.residual[stream_at], size_t(n) * size_t(h) * sizeof(float),
                                        cudaMemcpyDeviceToDevice, stream_));
    return ok();
  }
  if (s.decode) {  // every token samples
    norm_matmul(b.block_out, w.final_norm, w.lm_head, c.vocab_size, dtype::f32, b.logits, false);
  } else {
    cuda::rms_norm(b.block_out, b.residual[stream_at], w.final_norm, eps, n, h, b.normed, stream_);
    cuda::gather_rows(b.normed, h, in.logit_rows.device, s.samples, b.rows, stream_);
    cuda::matmul(cublas_, b.rows, s.samples, h, w.lm_head, c.vocab_size, dtype::f32, b.logits);
  }
  const cuda::sampling_rows params{in.temperature.device,
                                   in.top_p.device,
                                   in.top_k.device,
                                   in.min_p.device,
                                   in.repetition_penalty.device,
                                   in.frequency_penalty.device,
                                   in.presence_penalty.device,
                                   in.uniform.device,
                                   in.top_logprobs.device,
                                   in.history_offsets.device,
                                   in.history_tokens.device,
                                   in.history_seen.device,
                                   in.history_generated.device,
                                   in.history_bias.device,
                                   in.mask_rows.device,
                                   in.allowed.device,
                                   in.capacity().mask_words};
  cuda::sample_tokens(b.logits, s.samples, c.vocab_size, params, b.sampling_workspace, b.tokens, b.logprob, b.top_ids,
                      b.top_logprobs, stream_);
  return ok();
}

void gpu_step_runner::full_attention(const shape& s, const gpu_layer_weights& l, int layer) {
  const model_config& c = weights_->config;
  buffers& b = *buf_;
  const step_inputs& in = *inputs_;
  const int n = s.tokens, heads = c.num_heads, kv_heads = c.num_kv_heads, hd = c.head_dim;
  const int q_dim = heads * hd, kv_dim = kv_heads * hd, qkv_dim = qkv_width(c);
  const float eps = float(c.rms_norm_eps);
  const int max_blocks = in.capacity().max_blocks_per_seq;
  bf16* keys = b.keys[size_t(layer - first_)];
  bf16* values = b.values[size_t(layer - first_)];
  if (l.qkv_bias != nullptr) cuda::add_bias(b.qkv, n, qkv_dim, qkv_dim, l.qkv_bias, stream_);
  const bf16* k = b.qkv + q_dim;
  const bf16* v = k + kv_dim;
  const cuda::kv_cache_target cache{v, qkv_dim, in.slots.device, keys, values};
  if (s.decode) {  // one token a sequence: n == s.seqs; b.qkv's q is not read after it
    cuda::decode_attention(
        b.qkv, k, l.q_norm, l.k_norm, eps, s.seqs, heads, kv_heads, hd, qkv_dim, qkv_dim, in.positions.device,
        float(c.rope_theta), c.rotary_dim, cache,
        {keys, values, options_.block_size, in.block_tables.device, max_blocks, in.seq_lens.device, s.attn_len},
        b.attn_workspace, b.attn, stream_);
  } else {
    cuda::qk_norm_rope(b.qkv, k, l.q_norm, l.k_norm, eps, n, heads, kv_heads, hd, qkv_dim, qkv_dim, in.positions.device,
                       float(c.rope_theta), c.rotary_dim, cache, stream_);
    // A one-token query in flash attention's 64-row tiles wastes 63 of them: at batch 128
    // with a prompt joining, flash attention took 0.8 ms a layer, mostly the decode rows.
    const int d = s.decode_seqs;
    if (d > 0)
      cuda::paged_attention(
          b.qkv, qkv_dim, d, heads, kv_heads, hd,
          {keys, values, options_.block_size, in.block_tables.device, max_blocks, in.seq_lens.device, s.decode_len},
          b.attn_workspace, b.attn, stream_);
    if (d < s.seqs) {  // the decode sequences' d tokens come first
      TROUPE_CUDA_CHECK(cudaMemcpy2DAsync(b.q + size_t(d) * q_dim, size_t(q_dim) * sizeof(bf16),
                                          b.qkv + size_t(d) * qkv_dim, size_t(qkv_dim) * sizeof(bf16),
                                          size_t(q_dim) * sizeof(bf16), size_t(n - d), cudaMemcpyDeviceToDevice,
                                          stream_));
      cuda::flash_attention(
          b.q, heads, kv_heads, hd,
          {keys, values, options_.block_size, in.block_tables.device + size_t(d) * max_blocks, max_blocks, s.seqs - d,
           in.query_starts.device + d, in.positions_start.device + d, s.max_query_len},
          b.attn, stream_);
    }
  }
  // qwen3_5_moe's gate rows follow v in the fused row.
  if (qkv_dim > q_dim + 2 * kv_dim) cuda::output_gate(b.attn, v + kv_dim, qkv_dim, n, q_dim, stream_);
  cuda::matmul(cublas_, b.attn, n, q_dim, l.o, c.hidden_size, dtype::bf16, b.block_out);
  if (l.o_bias != nullptr) cuda::add_bias(b.block_out, n, c.hidden_size, c.hidden_size, l.o_bias, stream_);
}

void gpu_step_runner::linear_attention(const shape& s, const gpu_linear_attention& l, int layer) {
  const model_config& c = weights_->config;
  buffers& b = *buf_;
  const step_inputs& in = *inputs_;
  const int n = s.tokens, width = linear_in_width(c), conv_dim = c.linear_conv_dim();
  const int heads = c.linear_num_value_heads, key_width = c.linear_num_key_heads * c.linear_key_head_dim;
  const int value_width = heads * c.linear_value_head_dim;
  const size_t at = size_t(layer - first_);
  // The stacked projection's row: the conv's input, z, b, a.
  const bf16* z = b.qkv + conv_dim;
  const bf16* beta_in = z + value_width;
  const bf16* decay_in = beta_in + heads;
  const cuda::state_sequences seqs{s.seqs, s.max_query_len, s.decode ? nullptr : in.query_starts.device,
                                   in.positions_start.device, in.state_slots.device};
  cuda::causal_conv1d_silu(b.qkv, width, conv_dim, l.conv, c.linear_conv_kernel_dim, seqs, b.conv_states[at],
                           b.conv_out, stream_);
  // Prompts of a chunk or more walk their tokens a chunk at a time (the CPU path's form),
  // the other sequences token by token.
  const cuda::delta_rule_inputs delta_in{b.conv_out,
                                         b.conv_out + key_width,
                                         b.conv_out + 2 * key_width,
                                         conv_dim,
                                         decay_in,
                                         beta_in,
                                         width,
                                         l.neg_decay_rate,
                                         l.dt_bias};
  const cuda::delta_rule_heads delta_heads = delta_rule_heads_of(c);
  const bool chunked = !s.decode && s.max_query_len >= cuda::delta_rule_chunked_from;
  cuda::gated_delta_rule(delta_in, delta_heads, seqs, b.delta_states[at], b.attn, stream_,
                         chunked ? cuda::delta_rule_chunked_from : 1 << 30);
  if (chunked)
    cuda::gated_delta_rule_chunked(delta_in, delta_heads, seqs, b.delta_states[at], b.delta_sums, b.attn, stream_);
  cuda::gated_rms_norm(b.attn, z, width, l.norm, float(c.rms_norm_eps), n, heads, c.linear_value_head_dim, b.attn,
                       stream_);
  cuda::matmul(cublas_, b.attn, n, value_width, l.out, c.hidden_size, dtype::bf16, b.block_out);
}

// Onto the routed experts' rows in b.block_out, from the post-attention norm's rows in b.normed.
void gpu_step_runner::shared_expert(const gpu_layer_weights& l, int tokens) {
  const model_config& c = weights_->config;
  buffers& b = *buf_;
  const int h = c.hidden_size, width = c.shared_expert_intermediate_size;
  cuda::matmul(cublas_, b.normed, tokens, h, l.shared_expert.gate, width, dtype::bf16, b.gate);
  cuda::matmul(cublas_, b.normed, tokens, h, l.shared_expert.up, width, dtype::bf16, b.up);
  cuda::swiglu(b.gate, b.up, int64_t(tokens) * width, b.gate, stream_);
  cuda::matmul(cublas_, b.gate, tokens, width, l.shared_expert.down, h, dtype::bf16, b.shared_out);
  cuda::matmul(cublas_, b.normed, tokens, h, l.shared_expert_gate, 1, dtype::f32, b.shared_gate);
  cuda::shared_expert_add(b.block_out, b.shared_out, b.shared_gate, tokens, h, stream_);
}

// The tokens go out before this GPU computes its experts' rows, and the others' rows are
// taken after, so the GPUs compute at once. Sent and received on the stage's stream: no
// host sync.
status gpu_step_runner::moe_across_gpus(int layer, int tokens) {
  const model_config& c = weights_->config;
  buffers& b = *buf_;
  if (auto sent = remote_->send(b.normed, b.chosen, b.route_weights, tokens, stream_); !sent) return sent;
  const auto [first, last] = remote_->local_experts();
  if (first < last)
    if (auto r = experts_->run_rows(layer, b.normed, tokens, b.chosen, b.route_weights, first, last, b.moe_workspace,
                                    remote_->local_rows(), stream_);
        !r)
      return r;
  auto parts = remote_->receive(tokens, stream_);
  if (!parts) return parts.err();
  cuda::moe_combine_ranks(parts->data(), int(parts->size()), b.chosen, tokens, c.num_experts_per_tok, c.hidden_size,
                          b.block_out, stream_);
  return ok();
}

gpu_step_runner::shape gpu_step_runner::decode_shape(int seqs) const {
  int longest = 0;
  for (int i = 0; i < seqs; ++i) longest = std::max(longest, inputs_->seq_lens.host[i]);
  return {batch_bucket(seqs),
          batch_bucket(seqs),
          batch_bucket(seqs),
          true,
          context_bucket(longest, options_.max_model_len),
          1};
}

status gpu_step_runner::run_decode_graph(int seqs) {
  const shape s = decode_shape(seqs);
  if (!experts_->serving()) return error{"the expert group is restarting"};
  if (const uint64_t g = experts_->generation(); g != graphs_generation_) {
    for (auto& [key, exec] : graphs_) TROUPE_CUDA_CHECK(cudaGraphExecDestroy(exec));
    graphs_.clear();
    graphs_generation_ = g;
  }
  auto& exec = graphs_[{s.seqs, s.attn_len}];
  if (exec == nullptr) {
    const std::lock_guard turn(capture_turns());
    cudaGraph_t graph = nullptr;
    TROUPE_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    const status captured = forward(s);
    TROUPE_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    if (!captured) {
      TROUPE_CUDA_CHECK(cudaGraphDestroy(graph));
      graphs_.erase({s.seqs, s.attn_len});
      return captured;
    }
    TROUPE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    TROUPE_CUDA_CHECK(cudaGraphDestroy(graph));
  }
  TROUPE_CUDA_CHECK(cudaGraphLaunch(exec, stream_));
  return ok();
}

// With experts on other GPUs the wait has a timeout: a peer that died must not hang it.
status gpu_step_runner::finish_step() {
  if (remote_) return remote_->finish(stream_);
  TROUPE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return ok();
}

result<stage_output> gpu_step_runner::run(const forward_batch& batch, std::vector<float> hidden,
                                          const std::vector<sample_request>& samples) {
  const int seqs = int(batch.sequences.size()), tokens = int(batch.token_ids.size());
  const size_t row_floats = size_t(weights_->config.hidden_size),
               rows_bytes = size_t(tokens) * row_floats * sizeof(float);
  TROUPE_CHECK(
      first_ == 0 ? hidden.empty() : hidden.size() == size_t(tokens) * row_floats,
      first_ == 0 ? "the first stage was given hidden rows" : "hidden rows that do not match the step's tokens");
  TROUPE_CHECK(last_stage_ || samples.empty(), "a stage before the last was asked to sample");
  if (weights_->config.has_linear_layers())
    for (const auto& span : batch.sequences)
      TROUPE_CHECK(span.state_slot >= 0 && span.state_slot < options_.max_num_seqs,
                   "a sequence without a recurrent-state slot of the runner's pools");
  TROUPE_CUDA_CHECK(cudaSetDevice(options_.device));  // a stage's thread may not have made it current
  const int bucket = batch_bucket(seqs);
  const bool decode = options_.graphs && tokens == seqs && (!last_stage_ || int(samples.size()) == seqs) &&
                      bucket != 0 && bucket <= options_.max_num_seqs && bucket <= options_.max_num_batched_tokens;
  // The peers learn the step before anything is on the stream; from here a failure ends
  // their part too.
  if (remote_)
    if (auto started = remote_->start(decode ? bucket : tokens, first_, last_); !started) return started.err();
  auto fail = [&](const error& e) -> result<stage_output> {
    if (remote_) remote_->abandon(stream_);
    return e;
  };
  if (auto filled = inputs_->fill(batch, samples, decode ? bucket : 0, last_stage_); !filled) return fail(filled.err());
  inputs_->upload(stream_);
  if (first_ > 0) {  // the previous stage's rows into the stream; a graph's padding rows zero (finite)
    std::memcpy(hidden_host_, hidden.data(), rows_bytes);
    TROUPE_CUDA_CHECK(cudaMemcpyAsync(buf_->residual[0], hidden_host_, rows_bytes, cudaMemcpyHostToDevice, stream_));
    if (decode && bucket > tokens)
      TROUPE_CUDA_CHECK(cudaMemsetAsync(buf_->residual[0] + size_t(tokens) * row_floats, 0,
                                        size_t(bucket - tokens) * row_floats * sizeof(float), stream_));
  }
  status ran = ok();
  if (decode && !remote_) {
    ran = run_decode_graph(seqs);
  } else if (decode) {
    ran = forward(decode_shape(seqs));
  } else {
    shape s{tokens, seqs, int(samples.size()), false, 0, 0};
    for (const auto& span : batch.sequences) s.max_query_len = std::max(s.max_query_len, span.tokens);
    for (const auto& span : batch.sequences) {
      if (span.tokens != 1 || span.first_token != s.decode_seqs) break;
      ++s.decode_seqs;
      s.decode_len = std::max(s.decode_len, span.start + 1);
    }
    ran = forward(s);
  }
  if (!ran) return fail(ran.err());
  if (!last_stage_) {
    TROUPE_CUDA_CHECK(cudaMemcpyAsync(hidden_host_, buf_->residual[0], rows_bytes, cudaMemcpyDeviceToHost, stream_));
    if (auto done = finish_step(); !done) return done.err();
    hidden.assign(hidden_host_, hidden_host_ + size_t(tokens) * row_floats);
    return stage_output{{}, std::move(hidden)};
  }
  TROUPE_CUDA_CHECK(
      cudaMemcpyAsync(outputs_host_, buf_->outputs, buf_->outputs_bytes, cudaMemcpyDeviceToHost, stream_));
  if (auto done = finish_step(); !done) return done.err();
  auto at = [&](const void* device) { return outputs_host_ + (static_cast<const char*>(device) - buf_->outputs); };
  const int* ids = reinterpret_cast<const int*>(at(buf_->tokens));
  const float* logprob = reinterpret_cast<const float*>(at(buf_->logprob));
  const int* top_ids = reinterpret_cast<const int*>(at(buf_->top_ids));
  const float* top_lp = reinterpret_cast<const float*>(at(buf_->top_logprobs));
  stage_output out;
  for (size_t r = 0; r < samples.size(); ++r) {
    sampled_token t{ids[r], 0.0f, {}};
    const int want = samples[r].params.top_logprobs;
    if (want >= 0) {
      t.logprob = logprob[r];
      for (int j = 0; j < std::min(want, max_top_logprobs); ++j)
        t.top.push_back({top_ids[r * max_top_logprobs + j], top_lp[r * max_top_logprobs + j]});
    }
    out.tokens.push_back(std::move(t));
  }
  return out;
}

}  // namespace troupe
