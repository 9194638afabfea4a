#pragma once
// A stage's step on one GPU: its layers [first_layer, last_layer), all on the device. The
// first stage embeds the batch's tokens, a later one starts from the previous stage's
// residual rows (fp32, as the stream is on the device, so a split model computes what one
// runner does to the bit); the last stage applies the final norm, lm_head and sampling,
// any other hands its residual rows back. The host only packs the step's inputs and moves
// the rows and sampled tokens through pinned buffers. Pure decode steps run as CUDA
// graphs, one per (batch bucket, context-length bucket), captured on first use; prefill
// and mixed steps run eagerly (flash attention over the paged KV). A stage whose experts
// are partly on other GPUs (gpu_remote_experts) runs its decode steps eagerly in the
// graphs' padded shapes, the MoE transfers between its kernels: what a graph would compute,
// so its tokens are one GPU's. A qwen3_5_moe stage keeps its Gated DeltaNet layers' conv
// and delta-rule states in fp32 pools of max_num_seqs slots each, a sequence's slot the one
// kv_manager gave it; its decode graphs' padding sequences touch no slot.
#include <map>
#include <memory>
#include <utility>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "model/cuda/device_arena.hpp"
#include "model/cuda/gpu_experts.hpp"
#include "model/cuda/gpu_remote_experts.hpp"
#include "model/cuda/gpu_weights.hpp"
#include "model/cuda/step_inputs.hpp"
#include "model/step_runner.hpp"

namespace troupe {

struct gpu_runner_options {
  int num_blocks = 0;
  int block_size = 16;
  int max_model_len = 0;
  int max_num_seqs = 0;  // also the recurrent-state slots of linear-attention layers
  int max_num_batched_tokens = 0;
  bool graphs = true;  // false: decode steps run eagerly too (vLLM's --enforce-eager)
  // The stage's layers [first_layer, last_layer); its KV pool holds only these. A
  // last_layer of -1: through the model's last.
  int first_layer = 0;
  int last_layer = -1;
  int device = 0;  // the CUDA ordinal: the runner makes it current on the threads that use it
};

class gpu_step_runner final : public step_runner {
 public:
  // Carves the activations of the largest step and the KV pool out of `memory` (of at
  // least memory_bytes; its previous runner must be gone), or allocates them when it is
  // null: an error then when the GPU has too little. A stage's runners share one `memory`,
  // so a restart never needs the KV cache twice. A layer range outside the model is an
  // error. With `remote`, the MoE layers run remote->local_experts() from `experts` and
  // the rest on the GPUs it reaches.
  static result<std::unique_ptr<step_runner>> create(std::shared_ptr<const gpu_weights> weights,
                                                     std::shared_ptr<gpu_experts> experts,
                                                     const gpu_runner_options& options,
                                                     std::shared_ptr<device_arena> memory = nullptr,
                                                     std::shared_ptr<gpu_remote_experts> remote = nullptr);
  // An error for a stage of layers [first, last) that is not inside a model of `layers`.
  static status check_layer_range(int first, int last, int layers);
  // An error for a stage of layers [first, last) whose weights the process lacks: its
  // layers', and every expert of them unless its experts are computed elsewhere.
  static status check_held(const gpu_weights& weights, int first, int last, bool experts_elsewhere);
  // The bytes of activations (the KV pool aside), and of everything create carves.
  static size_t activation_bytes(const gpu_weights& weights, const gpu_experts& experts,
                                 const gpu_runner_options& options);
  static size_t memory_bytes(const gpu_weights& weights, const gpu_experts& experts, const gpu_runner_options& options);
  ~gpu_step_runner() override;

  result<stage_output> run(const forward_batch& batch, std::vector<float> hidden,
                           const std::vector<sample_request>& samples) override;

 private:
  struct buffers;
  struct shape {
    int tokens = 0, seqs = 0, samples = 0;
    bool decode = false;    // one token per sequence: split-K paged attention
    int attn_len = 0;       // decode: the longest context the grid covers
    int max_query_len = 0;  // prefill: the most new tokens of one sequence
    // Prefill and mixed steps: the leading sequences of one new token each (the running
    // ones of a step that also prefills), which paged_attention serves, and their longest
    // context; flash attention serves the rest.
    int decode_seqs = 0, decode_len = 0;
  };
  gpu_step_runner(std::shared_ptr<const gpu_weights> weights, std::shared_ptr<gpu_experts> experts,
                  const gpu_runner_options& options);
  // Enqueues the stage's part of the step on stream_ for the inputs (and, after the first
  // stage, the rows in residual[0]) already uploaded; a stage before the last leaves its
  // rows in residual[0].
  status forward(const shape& s);
  // A layer's mixer from its rows in buf_->qkv (the fused or stacked projection) to its
  // output in buf_->block_out: full attention over the paged KV (with qwen3_5_moe's output
  // gate), or Gated DeltaNet over the sequences' recurrent states.
  void full_attention(const shape& s, const gpu_layer_weights& l, int layer);
  void linear_attention(const shape& s, const gpu_linear_attention& l, int layer);
  // qwen3_5_moe's shared expert, added to the routed experts' output.
  void shared_expert(const gpu_layer_weights& l, int tokens);
  // A MoE layer's experts over this GPU and the remote ones, into buf_->block_out.
  status moe_across_gpus(int layer, int tokens);
  // A decode step of `seqs` sequences as its graph runs it: padded to its batch bucket.
  shape decode_shape(int seqs) const;
  status run_decode_graph(int seqs);
  // Waits for the step's work on stream_.
  status finish_step();

  std::shared_ptr<const gpu_weights> weights_;
  std::shared_ptr<gpu_experts> experts_;
  std::shared_ptr<gpu_remote_experts> remote_;  // null: every expert is in experts_
  gpu_runner_options options_;
  int first_ = 0, last_ = 0;
  bool last_stage_ = true;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::shared_ptr<device_arena> memory_;
  std::unique_ptr<buffers> buf_;
  std::unique_ptr<step_inputs> inputs_;
  char* outputs_host_ = nullptr;                           // pinned: the sampled tokens come back here
  float* hidden_host_ = nullptr;                           // pinned, [max_num_batched_tokens, hidden]: rows in or out
  std::map<std::pair<int, int>, cudaGraphExec_t> graphs_;  // by (batch, context) bucket
  uint64_t graphs_generation_ = 0;                         // the experts' when captured
};

}  // namespace troupe
