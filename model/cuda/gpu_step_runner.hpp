#pragma once
// A stage's step on one GPU: embed, every layer, logits and sampling, all on the device;
// the host only packs the step's inputs and reads back the sampled tokens. Pure decode
// steps run as CUDA graphs, one per (batch bucket, context-length bucket), captured on
// first use; prefill and mixed steps run eagerly (flash attention over the paged KV).
#include <map>
#include <memory>
#include <utility>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "model/cuda/device_arena.hpp"
#include "model/cuda/gpu_weights.hpp"
#include "model/cuda/step_inputs.hpp"
#include "model/step_runner.hpp"
#include "transport/gpu_experts.hpp"

namespace troupe {

struct gpu_runner_options {
  int num_blocks = 0;
  int block_size = 16;
  int max_model_len = 0;
  int max_num_seqs = 0;
  int max_num_batched_tokens = 0;
  bool graphs = true;  // false: decode steps run eagerly too (vLLM's --enforce-eager)
};

class gpu_step_runner final : public step_runner {
 public:
  // Carves the activations of the largest step and the KV pool out of `memory` (of at
  // least memory_bytes; its previous runner must be gone), or allocates them when it is
  // null: an error then when the GPU has too little. A stage's runners share one `memory`,
  // so a restart never needs the KV cache twice.
  static result<std::unique_ptr<step_runner>> create(std::shared_ptr<const gpu_weights> weights,
                                                     std::shared_ptr<gpu_experts> experts,
                                                     const gpu_runner_options& options,
                                                     std::shared_ptr<device_arena> memory = nullptr);
  // The bytes of activations (the KV pool aside), and of everything create carves.
  static size_t activation_bytes(const gpu_weights& weights, const gpu_experts& experts,
                                 const gpu_runner_options& options);
  static size_t memory_bytes(const gpu_weights& weights, const gpu_experts& experts,
                             const gpu_runner_options& options);
  ~gpu_step_runner() override;

  // Every layer is here (one stage), so `hidden` is always empty.
  result<stage_output> run(const forward_batch& batch, std::vector<float> hidden,
                           const std::vector<sample_request>& samples) override;

 private:
  struct buffers;
  struct shape {
    int tokens = 0, seqs = 0, samples = 0;
    bool decode = false;    // one token per sequence: split-K paged attention
    int attn_len = 0;       // decode: the longest context the grid covers
    int max_query_len = 0;  // prefill: the most new tokens of one sequence
  };
  gpu_step_runner(std::shared_ptr<const gpu_weights> weights, std::shared_ptr<gpu_experts> experts,
                  const gpu_runner_options& options);
  // Enqueues the whole step on stream_ for the inputs already uploaded.
  status forward(const shape& s);
  status run_decode_graph(int seqs);

  std::shared_ptr<const gpu_weights> weights_;
  std::shared_ptr<gpu_experts> experts_;
  gpu_runner_options options_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  std::shared_ptr<device_arena> memory_;
  std::unique_ptr<buffers> buf_;
  std::unique_ptr<step_inputs> inputs_;
  char* outputs_host_ = nullptr;  // pinned: the sampled tokens come back here
  std::map<std::pair<int, int>, cudaGraphExec_t> graphs_;  // by (batch, context) bucket
  uint64_t graphs_generation_ = 0;                          // the experts' when captured
};

}  // namespace troupe
