#pragma once
// A GPU stage's expert groups on other GPUs, over one NCCL communicator of the stage's own:
// rank 0 the stage, rank r the process of peers[r - 1] (cluster/expert_ranks.hpp). The
// communicator is made when the first step needs it and again whenever a peer's group was
// replaced or a step failed: a fresh id, which the control plane hands each peer
// (expert_peers::invite) while this rank joins; a step then starts with a control message
// to every peer (announce) and its transfers go over NCCL (transport/expert_parallel.hpp
// has their layout). No step waits for ever: joining takes at most join_timeout, the
// step's wait at most wait_timeout, after which the communicator is aborted, its kernels
// with it, and the stream drained.
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "model/cuda/gpu_remote_experts.hpp"
#include "transport/expert_parallel.hpp"
#include "transport/nccl_transport.hpp"

namespace troupe {

class nccl_experts final : public gpu_remote_experts {
 public:
  struct peer {
    int first_expert = 0, last_expert = 0;  // [first, last)
  };
  struct options {
    int stage = 0;  // its index in the replica's pipeline: what the peers know it by
    int device = 0;
    int max_tokens = 0;  // rows of a step's MoE layer
    int hidden = 0, k = 0;
    std::pair<int, int> local{0, 0};  // the experts this process serves, [first, last)
    std::vector<peer> peers;          // rank r + 1 serves peers[r]
    std::chrono::milliseconds join_timeout{60000}, wait_timeout{5000};
  };

  // The device memory it allocates: the local rows and each peer's, fp32 [max_tokens * k, hidden].
  static size_t buffer_bytes(int max_tokens, int hidden, int k, size_t peers);
  static result<std::unique_ptr<nccl_experts>> create(options o, std::shared_ptr<expert_peers> control);
  ~nccl_experts() override;
  nccl_experts(const nccl_experts&) = delete;
  nccl_experts& operator=(const nccl_experts&) = delete;

  std::pair<int, int> local_experts() const override { return o_.local; }
  float* local_rows() override { return rows_; }
  status start(int tokens, int first_layer, int last_layer) override;
  status send(__nv_bfloat16* x, int* chosen, float* weights, int tokens, cudaStream_t stream) override;
  result<std::vector<cuda::moe_rows_part>> receive(int tokens, cudaStream_t stream) override;
  status finish(cudaStream_t stream) override;
  void abandon(cudaStream_t stream) override;

 private:
  nccl_experts(options o, std::shared_ptr<expert_peers> control);
  status join();
  float* peer_rows(size_t r) { return rows_ + (r + 1) * rows_floats_; }
  // Aborts the communicator (its kernels stop) and waits until `stream` is through.
  void drop(cudaStream_t stream);

  options o_;
  std::shared_ptr<expert_peers> control_;
  std::unique_ptr<nccl_transport> comm_;  // null until joined, and after a failure
  uint64_t session_ = 0;
  uint64_t joined_generation_ = 0;  // control_'s, when comm_ was joined
  std::mt19937_64 sessions_;
  float* rows_ = nullptr;  // the local rows, then each peer's
  size_t rows_floats_ = 0;
};

// Waits up to `timeout` until `stream` is through, after its NCCL communicator was aborted
// (which stops the kernels waiting on a peer); a stream still busy then is a broken
// invariant: the process ends loudly rather than hang.
void drain_after_abort(cudaStream_t stream, std::chrono::milliseconds timeout);

}  // namespace troupe
