#pragma once
// The CUDA backend on one GPU: bf16 weights and KV in device memory, the step on the
// device (gpu_step_runner), the experts served through the GPU's in-process transport.
#include <functional>
#include <memory>
#include <string>

#include "base/result.hpp"
#include "model/compute_backend.hpp"
#include "model/cuda/gpu_experts.hpp"
#include "model/cuda/gpu_remote_experts.hpp"
#include "model/cuda/gpu_weights.hpp"

namespace troupe {

result<compute_backend> make_gpu_backend(const backend_options& options);

// The same with what expert parallelism across GPUs builds on: the weights and this GPU's
// experts (an expert server computes from them), and runners whose MoE layers reach
// experts on other GPUs through `remote` (null: every expert is attached here).
struct gpu_backend_parts {
  compute_backend backend;
  std::shared_ptr<const gpu_weights> weights;
  std::shared_ptr<gpu_experts> experts;
  std::function<result<std::unique_ptr<step_runner>>(int first_layer, int last_layer,
                                                     std::shared_ptr<gpu_remote_experts> remote)>
      make_runner_with;
};
result<gpu_backend_parts> make_gpu_backend_parts(const backend_options& options);

// The CUDA devices this process sees: 0 without a driver or a device (the failed query
// leaves no error behind for the next CUDA call).
int visible_cuda_devices();
// "this machine has 2 CUDA devices (cuda:0 to cuda:1)", for a device past the last.
std::string cuda_devices_text(int devices);

}  // namespace troupe
