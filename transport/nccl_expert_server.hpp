#pragma once
// The other end of nccl_experts: an expert group's experts [first, last) served to GPU
// stages of other processes, each over the stage's own NCCL communicator (one per stage,
// replaced whenever the stage joins a new one). A step of a stage enqueues, for every MoE
// layer of its range, the receipt of the stage's tokens, fused_moe_rows over this group's
// experts (the kernels one GPU would pick for the batch), and the send of the rows back,
// on one stream of its own, then waits for it (at most wait_timeout: a stage that died
// mid-step leaves the communicator aborted and the stream drained). Calls come one at a
// time from the group's thread.
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "model/cuda/gpu_weights.hpp"
#include "transport/expert_parallel.hpp"
#include "transport/nccl_transport.hpp"

namespace troupe {

class nccl_expert_server final : public remote_expert_server {
 public:
  struct options {
    int first_expert = 0, last_expert = 0;  // [first, last)
    int device = 0;
    int max_tokens = 0;  // rows of a step's MoE layer
    std::chrono::milliseconds join_timeout{60000}, wait_timeout{5000};
  };

  // The device memory it allocates for a model's shape.
  static size_t buffer_bytes(const model_config& c, int max_tokens, int first_expert, int last_expert);
  static result<std::unique_ptr<nccl_expert_server>> create(std::shared_ptr<const gpu_weights> weights, options o);
  ~nccl_expert_server() override;
  nccl_expert_server(const nccl_expert_server&) = delete;
  nccl_expert_server& operator=(const nccl_expert_server&) = delete;

  status join(const expert_session& session) override;
  status serve(const expert_step& step) override;

 private:
  struct parts;
  struct stage_link {
    uint64_t session = 0;
    std::unique_ptr<nccl_transport> comm;
  };
  nccl_expert_server(std::shared_ptr<const gpu_weights> weights, options o);
  status enqueue(nccl_transport& comm, const expert_step& step);

  std::shared_ptr<const gpu_weights> weights_;
  options o_;
  std::map<int, stage_link> stages_;  // by the stage's index
  cudaStream_t stream_ = nullptr;
  char* memory_ = nullptr;
  std::unique_ptr<parts> parts_;
};

}  // namespace troupe
