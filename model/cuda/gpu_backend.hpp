#pragma once
// The CUDA backend on one GPU: bf16 weights and KV in device memory, the step on the
// device (gpu_step_runner), the experts served through the GPU's in-process transport.
#include "base/result.hpp"
#include "model/compute_backend.hpp"

namespace troupe {

result<compute_backend> make_gpu_backend(const backend_options& options);

}  // namespace troupe
