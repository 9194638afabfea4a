#include "transport/nccl_experts.hpp"

#include <thread>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"

namespace troupe {

void drain_after_abort(cudaStream_t stream, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e != cudaErrorNotReady) {
      TROUPE_CHECK(e == cudaSuccess, "a stream of an aborted NCCL communicator failed");
      return;
    }
    TROUPE_CHECK(std::chrono::steady_clock::now() < deadline,
                 "a stream still busy after its NCCL communicator was aborted");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

size_t nccl_experts::buffer_bytes(int max_tokens, int hidden, int k, size_t peers) {
  return (peers + 1) * expert_layer_transfers(max_tokens, hidden, k).pair_rows;
}

nccl_experts::nccl_experts(options o, std::shared_ptr<expert_peers> control)
    : o_(std::move(o)), control_(std::move(control)), sessions_(std::random_device{}()) {}

result<std::unique_ptr<nccl_experts>> nccl_experts::create(options o, std::shared_ptr<expert_peers> control) {
  const size_t parts = o.peers.size() + (o.local.first < o.local.second ? 1 : 0);
  TROUPE_CHECK(
      !o.peers.empty() && parts <= size_t(cuda::moe_combine_max_parts) && control,
      "expert parallelism needs peers (with the local experts at most moe_combine_max_parts) and a control plane");
  std::unique_ptr<nccl_experts> e(new nccl_experts(std::move(o), std::move(control)));
  e->rows_floats_ = expert_layer_transfers(e->o_.max_tokens, e->o_.hidden, e->o_.k).pair_rows / sizeof(float);
  TROUPE_CUDA_CHECK(cudaSetDevice(e->o_.device));
  const size_t bytes = buffer_bytes(e->o_.max_tokens, e->o_.hidden, e->o_.k, e->o_.peers.size());
  if (const cudaError_t r = cudaMalloc(&e->rows_, bytes); r != cudaSuccess) {
    cudaGetLastError();
    return error{"the expert rows of stage " + std::to_string(e->o_.stage) + "'s peers (" +
                 std::to_string(bytes >> 20) + " MiB): " + cudaGetErrorString(r)};
  }
  return e;
}

nccl_experts::~nccl_experts() {
  comm_.reset();
  cudaFree(rows_);
}

// A fresh communicator: rank 0 makes its id, each peer is invited to its rank, and joining
// returns once all have joined (or fails after the timeout).
status nccl_experts::join() {
  comm_.reset();
  if (const std::string missing = control_->missing(); !missing.empty())
    return error{"expert groups on other GPUs are not up: " + missing};
  auto id = nccl_transport::new_id();
  if (!id) return id.err();
  const uint64_t generation = control_->generation();
  do session_ = sessions_();
  while (session_ == 0);
  const int ranks = int(o_.peers.size()) + 1;
  for (int r = 1; r < ranks; ++r) control_->invite({o_.stage, session_, *id, r, ranks});
  auto joined = nccl_transport::create(*id, 0, ranks, o_.device, o_.join_timeout);
  if (!joined) return error{"joining the expert groups on other GPUs: " + joined.err().message};
  comm_ = std::move(*joined);
  joined_generation_ = generation;
  return ok();
}

status nccl_experts::start(int tokens, int first_layer, int last_layer) {
  TROUPE_CHECK(tokens >= 0 && tokens <= o_.max_tokens, "a step larger than the expert buffers");
  if (!comm_ || !comm_->usable() || control_->generation() != joined_generation_)
    if (auto joined = join(); !joined) return joined;
  control_->announce({o_.stage, session_, tokens, first_layer, last_layer});
  return ok();
}

status nccl_experts::send(__nv_bfloat16* x, int* chosen, float* weights, int tokens, cudaStream_t stream) {
  const expert_layer_bytes b = expert_layer_transfers(tokens, o_.hidden, o_.k);
  std::vector<nccl_transport::transfer> sends;
  for (int r = 1; r <= int(o_.peers.size()); ++r) {
    sends.push_back({r, x, b.rows});
    sends.push_back({r, chosen, b.chosen});
    sends.push_back({r, weights, b.weights});
  }
  if (auto sent = comm_->exchange(sends, {}, stream); !sent)
    return error{"sending a MoE layer's tokens to the expert groups on other GPUs: " + sent.err().message};
  return ok();
}

result<std::vector<cuda::moe_rows_part>> nccl_experts::receive(int tokens, cudaStream_t stream) {
  const expert_layer_bytes b = expert_layer_transfers(tokens, o_.hidden, o_.k);
  std::vector<nccl_transport::transfer> receives;
  std::vector<cuda::moe_rows_part> parts;
  if (o_.local.first < o_.local.second) parts.push_back({o_.local.first, o_.local.second, rows_});
  for (size_t r = 0; r < o_.peers.size(); ++r) {
    receives.push_back({int(r) + 1, peer_rows(r), b.pair_rows});
    parts.push_back({o_.peers[r].first_expert, o_.peers[r].last_expert, peer_rows(r)});
  }
  if (auto received = comm_->exchange({}, receives, stream); !received)
    return error{"receiving a MoE layer's rows from the expert groups on other GPUs: " + received.err().message};
  return parts;
}

status nccl_experts::finish(cudaStream_t stream) {
  if (auto done = comm_->wait(stream, o_.wait_timeout); !done) {
    drop(stream);
    return error{"the expert groups on other GPUs: " + done.err().message};
  }
  return ok();
}

void nccl_experts::abandon(cudaStream_t stream) { drop(stream); }

void nccl_experts::drop(cudaStream_t stream) {
  comm_.reset();
  drain_after_abort(stream, o_.wait_timeout);
}

}  // namespace troupe
