#pragma once
// The CUDA backend on one GPU: bf16 weights and KV in device memory, the step on the
// device (gpu_step_runner), the experts served through the GPU's in-process transport.
#include <string>

#include "base/result.hpp"
#include "model/compute_backend.hpp"

namespace troupe {

result<compute_backend> make_gpu_backend(const backend_options& options);

// The CUDA devices this process sees: 0 without a driver or a device (the failed query
// leaves no error behind for the next CUDA call).
int visible_cuda_devices();
// "this machine has 2 CUDA devices (cuda:0 to cuda:1)", for a device past the last.
std::string cuda_devices_text(int devices);

}  // namespace troupe
