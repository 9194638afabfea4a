#include "transport/gpu_experts.hpp"

#include "kernels/cuda/fused_moe.cuh"

namespace troupe {

void gpu_experts::attach(const std::string& group, int first_expert, int last_expert) {
  std::lock_guard lock(mutex_);
  groups_[group] = {first_expert, last_expert};
  ++generation_;
}

void gpu_experts::detach(const std::string& group) {
  std::lock_guard lock(mutex_);
  groups_.erase(group);
  ++generation_;
}

// One group serves every expert of this GPU (local_engine refuses more).
bool gpu_experts::serving_locked() const {
  return groups_.size() == 1 && groups_.begin()->second == std::pair{0, weights_->config.num_experts};
}

uint64_t gpu_experts::generation() const {
  std::lock_guard lock(mutex_);
  return generation_;
}

bool gpu_experts::serving() const {
  std::lock_guard lock(mutex_);
  return serving_locked();
}

size_t gpu_experts::workspace_bytes(int max_tokens) const {
  const model_config& c = weights_->config;
  return cuda::fused_moe_workspace_bytes(max_tokens, c.num_experts_per_tok, c.num_experts, c.hidden_size,
                                         c.moe_intermediate_size);
}

status gpu_experts::run(int layer, const __nv_bfloat16* x, int tokens, const int* chosen, const float* weights,
                        void* workspace, __nv_bfloat16* out, cudaStream_t stream, cublasHandle_t cublas) {
  const model_config& c = weights_->config;
  std::lock_guard lock(mutex_);
  if (!serving_locked())
    return error{"experts 0.." + std::to_string(c.num_experts - 1) + " have no expert group (restarting)"};
  const gpu_layer_weights& l = weights_->layers[size_t(layer)];
  cuda::fused_moe(x, tokens, c.hidden_size, chosen, weights, c.num_experts_per_tok, l.w13, l.w2,
                  c.moe_intermediate_size, 0, c.num_experts, workspace, out, stream, cublas);
  return ok();
}

}  // namespace troupe
