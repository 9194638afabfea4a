#pragma once
// Where a stage sends the routed tokens of a MoE layer: experts on the same device are a
// direct call (local_experts); experts elsewhere sit behind a transport, which can fail
// (the group crashed or is restarting): then the step fails and is re-run.
#include <functional>
#include <string>

#include "base/result.hpp"

namespace troupe {

class expert_executor {
 public:
  virtual ~expert_executor() = default;
  // out[t] = sum over j < k of weights[t*k + j] * expert chosen[t*k + j] applied to x[t],
  // for MoE layer `layer`; x and out are [tokens, hidden].
  virtual status run(int layer, const float* x, int tokens, int k, const int* chosen, const float* weights,
                     float* out) = 0;
};

// Puts expert group `group`'s experts [first, last) where the stages reach them (a
// transport, on the CPU or a GPU) and returns what takes them back out.
using experts_attacher =
    std::function<std::function<void()>(const std::string& group, int first_expert, int last_expert)>;

}  // namespace troupe
