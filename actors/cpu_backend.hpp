#pragma once
// The CPU backend: fp32 math over the checkpoint's memory-mapped weights (or random ones),
// KV in fp32, expert groups reached through the in-process transport.
#include "base/result.hpp"
#include "model/compute_backend.hpp"

namespace troupe {

result<compute_backend> make_cpu_backend(const backend_options& options);

}  // namespace troupe
