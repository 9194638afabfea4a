#include "model/cuda/gpu_experts.hpp"

#include <algorithm>

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

bool gpu_experts::covers_locked(int first_expert, int last_expert) const {
  for (int e = first_expert; e < last_expert; ++e)
    if (std::none_of(groups_.begin(), groups_.end(),
                     [e](const auto& g) { return e >= g.second.first && e < g.second.second; }))
      return false;
  return true;
}

uint64_t gpu_experts::generation() const {
  std::lock_guard lock(mutex_);
  return generation_;
}

bool gpu_experts::serving() const {
  std::lock_guard lock(mutex_);
  return covers_locked(0, weights_->config.num_experts);
}

bool gpu_experts::covers(int first_expert, int last_expert) const {
  std::lock_guard lock(mutex_);
  return covers_locked(first_expert, last_expert);
}

size_t gpu_experts::workspace_bytes(int max_tokens) const {
  const model_config& c = weights_->config;
  return cuda::fused_moe_workspace_bytes(max_tokens, slot_picks(c), slot_experts(c), c.hidden_size,
                                         c.moe_intermediate_size);
}

status gpu_experts::run(int layer, const __nv_bfloat16* x, int tokens, int picks, const int* chosen,
                        const float* weights, void* workspace, __nv_bfloat16* out, cudaStream_t stream,
                        cublasHandle_t cublas) {
  const model_config& c = weights_->config;
  std::lock_guard lock(mutex_);
  if (!covers_locked(0, c.num_experts))
    return error{"experts 0.." + std::to_string(c.num_experts - 1) + " have no expert group (restarting)"};
  const gpu_layer_weights& l = weights_->layers[size_t(layer)];
  if (auto held = holds_experts(c, l, layer, 0, c.num_experts); !held) return held;
  const int shared = picks - c.num_experts_per_tok;  // the shared expert's slot, when picked
  cuda::fused_moe(x, tokens, c.hidden_size, chosen, weights, picks, l.w13, l.w2, c.moe_intermediate_size, 0,
                  c.num_experts + shared, workspace, out, stream, cublas);
  return ok();
}

status gpu_experts::run_rows(int layer, const __nv_bfloat16* x, int tokens, const int* chosen, const float* weights,
                             int first_expert, int last_expert, void* workspace, float* y, cudaStream_t stream) {
  const model_config& c = weights_->config;
  std::lock_guard lock(mutex_);
  if (!covers_locked(first_expert, last_expert))
    return error{"experts " + std::to_string(first_expert) + ".." + std::to_string(last_expert - 1) +
                 " have no expert group here (restarting)"};
  const gpu_layer_weights& l = weights_->layers[size_t(layer)];
  if (auto held = holds_experts(c, l, layer, first_expert, last_expert); !held) return held;
  cuda::fused_moe_rows(x, tokens, c.hidden_size, chosen, weights, c.num_experts_per_tok, w13_of(c, l, first_expert),
                       w2_of(c, l, first_expert), c.moe_intermediate_size, first_expert, last_expert, c.num_experts,
                       workspace, y, stream);
  return ok();
}

}  // namespace troupe
