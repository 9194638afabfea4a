#pragma once
// The in-process transport for MoE dispatch on one GPU: the expert group attaches its
// range of the experts already in GPU memory, and a stage's MoE layer runs them as a
// direct call on the stage's own stream (fused_moe), no copy. A range nobody serves (its
// group crashed and is restarting) fails the call, and with it the step. In a cluster whose
// expert groups are spread over GPUs, this process's group is attached here and the stage
// computes its pairs' rows (run_rows) while the others come over NCCL (nccl_experts).
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "base/result.hpp"
#include "model/cuda/gpu_weights.hpp"

namespace troupe {

class gpu_experts {
 public:
  explicit gpu_experts(std::shared_ptr<const gpu_weights> weights) : weights_(std::move(weights)) {}

  void attach(const std::string& group, int first_expert, int last_expert);
  void detach(const std::string& group);
  // Changes at every attach and detach: a decode graph captured under another
  // generation holds a stale dispatch and must be captured again.
  uint64_t generation() const;
  // Whether every expert has a group: a captured graph may only run then.
  bool serving() const;
  // Whether the attached groups serve every expert of [first, last).
  bool covers(int first_expert, int last_expert) const;

  // Scratch `run` needs for up to `max_tokens` tokens: the caller owns it, so a captured
  // graph keeps its addresses.
  size_t workspace_bytes(int max_tokens) const;

  // out[t] = the routed experts' weighted sum for x[t] in MoE layer `layer` (all device
  // pointers, [tokens, hidden] bf16; chosen and weights [tokens, picks]), enqueued on
  // `stream`. picks is k, or k + 1 with the shared expert's pick last where it is in its
  // slot (route_top_k's shared expert): the sum holds its rows too.
  // A cuBLAS handle on `stream` lets a large batch take fused_moe's cuBLAS path, which
  // waits for the stream: pass null while capturing a graph.
  status run(int layer, const __nv_bfloat16* x, int tokens, int picks, const int* chosen, const float* weights,
             void* workspace, __nv_bfloat16* out, cudaStream_t stream, cublasHandle_t cublas);

  // Expert parallelism: the rows fused_moe would add for the pairs whose expert is in
  // [first, last) (cuda::fused_moe_rows), into y [tokens * k, hidden] fp32, on `stream`.
  status run_rows(int layer, const __nv_bfloat16* x, int tokens, const int* chosen, const float* weights,
                  int first_expert, int last_expert, void* workspace, float* y, cudaStream_t stream);

 private:
  bool covers_locked(int first_expert, int last_expert) const;

  std::shared_ptr<const gpu_weights> weights_;
  mutable std::mutex mutex_;
  std::map<std::string, std::pair<int, int>> groups_;
  uint64_t generation_ = 0;
};

}  // namespace troupe
