#include "transport/nccl_expert_server.hpp"

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/fused_moe.cuh"
#include "transport/nccl_experts.hpp"

namespace troupe {

// Where a layer's transfers land and its rows are computed, carved from one allocation.
struct nccl_expert_server::parts {
  __nv_bfloat16* x = nullptr;  // [max_tokens, hidden]
  int* chosen = nullptr;       // [max_tokens, k]
  float* weights = nullptr;    // [max_tokens, k]
  float* rows = nullptr;       // [max_tokens * k, hidden]
  void* workspace = nullptr;   // fused_moe_rows'
};

namespace {

nccl_expert_server::options checked(nccl_expert_server::options o, const model_config& c) {
  TROUPE_CHECK(
      o.first_expert >= 0 && o.first_expert < o.last_expert && o.last_expert <= c.num_experts && o.max_tokens > 0,
      "an expert server of experts inside the model, for some tokens");
  return o;
}

}  // namespace

size_t nccl_expert_server::buffer_bytes(const model_config& c, int max_tokens, int first_expert, int last_expert) {
  const expert_layer_bytes b = expert_layer_transfers(max_tokens, c.hidden_size, c.num_experts_per_tok);
  auto up = [](size_t n) { return (n + 255) / 256 * 256; };
  return up(b.rows) + up(b.chosen) + up(b.weights) + up(b.pair_rows) +
         cuda::fused_moe_workspace_bytes(max_tokens, c.num_experts_per_tok, last_expert - first_expert, c.hidden_size,
                                         c.moe_intermediate_size);
}

nccl_expert_server::nccl_expert_server(std::shared_ptr<const gpu_weights> weights, options o)
    : weights_(std::move(weights)), o_(checked(o, weights_->config)), parts_(std::make_unique<parts>()) {}

result<std::unique_ptr<nccl_expert_server>> nccl_expert_server::create(std::shared_ptr<const gpu_weights> weights,
                                                                       options o) {
  std::unique_ptr<nccl_expert_server> s(new nccl_expert_server(std::move(weights), o));
  const model_config& c = s->weights_->config;
  TROUPE_CUDA_CHECK(cudaSetDevice(s->o_.device));
  const size_t bytes = buffer_bytes(c, s->o_.max_tokens, s->o_.first_expert, s->o_.last_expert);
  if (const cudaError_t r = cudaMalloc(&s->memory_, bytes); r != cudaSuccess) {
    cudaGetLastError();
    return error{"the transfer buffers of experts " + std::to_string(s->o_.first_expert) + ".." +
                 std::to_string(s->o_.last_expert - 1) + " (" + std::to_string(bytes >> 20) +
                 " MiB): " + cudaGetErrorString(r)};
  }
  const expert_layer_bytes b = expert_layer_transfers(s->o_.max_tokens, c.hidden_size, c.num_experts_per_tok);
  size_t used = 0;
  auto take = [&](size_t n) {
    char* at = s->memory_ + used;
    used += (n + 255) / 256 * 256;
    return at;
  };
  parts& p = *s->parts_;
  p.x = reinterpret_cast<__nv_bfloat16*>(take(b.rows));
  p.chosen = reinterpret_cast<int*>(take(b.chosen));
  p.weights = reinterpret_cast<float*>(take(b.weights));
  p.rows = reinterpret_cast<float*>(take(b.pair_rows));
  p.workspace = s->memory_ + used;
  TROUPE_CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream_, cudaStreamNonBlocking));
  return s;
}

nccl_expert_server::~nccl_expert_server() {
  cudaSetDevice(o_.device);
  stages_.clear();  // aborts the communicators: nothing waits on a stage any more
  if (stream_ != nullptr) {
    drain_after_abort(stream_, o_.wait_timeout);
    cudaStreamDestroy(stream_);
  }
  cudaFree(memory_);
}

status nccl_expert_server::join(const expert_session& session) {
  stages_.erase(session.stage);
  auto joined = nccl_transport::create(session.id, session.rank, session.ranks, o_.device, o_.join_timeout);
  if (!joined)
    return error{"joining stage " + std::to_string(session.stage) + "'s communicator: " + joined.err().message};
  stages_[session.stage] = {session.session, std::move(*joined)};
  return ok();
}

status nccl_expert_server::serve(const expert_step& step) {
  const std::string of = "step of stage " + std::to_string(step.stage) + ": ";
  auto it = stages_.find(step.stage);
  if (it == stages_.end() || it->second.session != step.session || !it->second.comm->usable())
    return error{of + "its session is not this group's (a join failed, or its communicator was dropped)"};
  const int layers = weights_->config.num_layers;
  if (step.tokens < 0 || step.tokens > o_.max_tokens || step.first_layer < 0 || step.first_layer > step.last_layer ||
      step.last_layer > layers)
    return error{of + std::to_string(step.tokens) + " tokens in layers [" + std::to_string(step.first_layer) + ", " +
                 std::to_string(step.last_layer) + ") do not fit this server"};
  TROUPE_CUDA_CHECK(cudaSetDevice(o_.device));
  nccl_transport& comm = *it->second.comm;
  status done = enqueue(comm, step);
  if (done) done = comm.wait(stream_, o_.wait_timeout);
  if (!done) {
    stages_.erase(it);
    drain_after_abort(stream_, o_.wait_timeout);
    return error{of + done.err().message};
  }
  return ok();
}

// Every MoE layer of the step: the stage's tokens in, this group's rows, the rows out.
status nccl_expert_server::enqueue(nccl_transport& comm, const expert_step& step) {
  const model_config& c = weights_->config;
  const parts& p = *parts_;
  const expert_layer_bytes b = expert_layer_transfers(step.tokens, c.hidden_size, c.num_experts_per_tok);
  for (int layer = step.first_layer; layer < step.last_layer; ++layer) {
    const gpu_layer_weights& l = weights_->layers[size_t(layer)];
    if (!l.moe) continue;
    if (auto held = holds_experts(c, l, layer, o_.first_expert, o_.last_expert); !held) return held;
    if (auto in = comm.exchange({}, {{0, p.x, b.rows}, {0, p.chosen, b.chosen}, {0, p.weights, b.weights}}, stream_);
        !in)
      return in;
    cuda::fused_moe_rows(p.x, step.tokens, c.hidden_size, p.chosen, p.weights, c.num_experts_per_tok,
                         w13_of(c, l, o_.first_expert), w2_of(c, l, o_.first_expert), c.moe_intermediate_size,
                         o_.first_expert, o_.last_expert, c.num_experts, p.workspace, p.rows, stream_);
    if (auto out = comm.exchange({{0, p.rows, b.pair_rows}}, {}, stream_); !out) return out;
  }
  return ok();
}

}  // namespace troupe
