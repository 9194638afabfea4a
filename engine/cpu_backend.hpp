#pragma once
// The CPU backend: fp32 math over the checkpoint's memory-mapped weights (or random ones),
// KV in fp32, expert groups reached through the in-process transport.
#include <memory>

#include "base/result.hpp"
#include "model/compute_backend.hpp"
#include "transport/in_process_experts.hpp"

namespace troupe {

// Builds a runner of layers [first, last) whose MoE layers go to `experts`.
using step_runner_over = std::function<result<std::unique_ptr<step_runner>>(int first_layer, int last_layer,
                                                                            std::shared_ptr<expert_executor> experts)>;

// What a cluster node needs beyond compute_backend: the expert groups this process holds
// (attach_experts puts them there; other nodes reach them through an expert_server), and
// runners whose MoE layers reach the cluster's groups wherever they run.
struct cpu_node_backend {
  compute_backend backend;
  std::shared_ptr<in_process_experts> groups;
  step_runner_over make_runner_over;
};

result<cpu_node_backend> make_cpu_node_backend(const backend_options& options);
result<compute_backend> make_cpu_backend(const backend_options& options);

}  // namespace troupe
