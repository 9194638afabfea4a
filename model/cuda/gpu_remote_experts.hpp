#pragma once
// What a GPU stage's MoE layers reach beyond the experts in its own process: expert groups
// on other GPUs (nccl_experts, over NCCL). Per MoE layer the stage sends its tokens out
// before it computes its own experts' rows, and receives the others' rows after, so both
// run at once; it then sums each token's pair rows in routing order (moe_combine_ranks),
// the sum one GPU makes. Every transfer is enqueued on the stage's stream; only start and
// finish involve the host (a control message, the wait for the step). Used from the
// stage's thread, with its device current.
#include <utility>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "base/result.hpp"
#include "kernels/cuda/moe_combine_ranks.cuh"

namespace troupe {

class gpu_remote_experts {
 public:
  virtual ~gpu_remote_experts() = default;

  // The experts [first, last) this process serves (its expert group's), computed in place
  // into local_rows(); empty when every expert is elsewhere.
  virtual std::pair<int, int> local_experts() const = 0;
  // fp32 [tokens * k, hidden] for the local pairs' rows (fused_moe_rows).
  virtual float* local_rows() = 0;

  // Before a step: joins the peers in a new communicator when there is none (or a peer
  // was replaced since) and tells them the step: `tokens` rows in every MoE layer of
  // [first_layer, last_layer).
  virtual status start(int tokens, int first_layer, int last_layer) = 0;
  // A MoE layer: its tokens' normed rows [tokens, hidden], chosen experts and weights
  // [tokens, k] to every peer, enqueued on `stream`.
  virtual status send(__nv_bfloat16* x, int* chosen, float* weights, int tokens, cudaStream_t stream) = 0;
  // The same layer's rows from every peer, enqueued on `stream`: the parts moe_combine_ranks
  // sums, local_rows() with them.
  virtual result<std::vector<cuda::moe_rows_part>> receive(int tokens, cudaStream_t stream) = 0;
  // After the step's last call: waits for `stream`. An error when a peer died or stalls
  // past the timeout; the communicator is then dropped (the next start joins a new one)
  // and the stream drained.
  virtual status finish(cudaStream_t stream) = 0;
  // A step that failed between start and finish: its session is over (the peers wait for
  // transfers that never come), so the communicator is dropped and the stream drained.
  virtual void abandon(cudaStream_t stream) = 0;
};

}  // namespace troupe
