#include "transport/in_process_experts.hpp"

#include <vector>

namespace troupe {

void in_process_experts::attach(const std::string& group, std::shared_ptr<expert_executor> executor, int first_expert,
                                int last_expert) {
  std::lock_guard lock(mutex_);
  groups_[group] = {std::move(executor), first_expert, last_expert};
}

void in_process_experts::detach(const std::string& group) {
  std::lock_guard lock(mutex_);
  groups_.erase(group);
}

status in_process_experts::run(int layer, const float* x, int tokens, int k, const int* chosen, const float* weights,
                               float* out) {
  std::vector<entry> groups;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [name, e] : groups_) groups.push_back(e);
  }
  std::vector<bool> served(static_cast<size_t>(num_experts_), false);
  for (const auto& g : groups)
    for (int e = g.first; e < g.last; ++e) served[size_t(e)] = true;
  for (int i = 0; i < tokens * k; ++i)
    if (!served[size_t(chosen[i])])
      return error{"expert " + std::to_string(chosen[i]) + " of layer " + std::to_string(layer) +
                   " has no live expert group"};
  // The first group writes out; every other group's share is added to it.
  std::vector<float> share;
  for (size_t i = 0; i < groups.size(); ++i) {
    float* target = out;
    if (i > 0) {
      share.resize(size_t(tokens) * size_t(hidden_));
      target = share.data();
    }
    if (auto s = groups[i].executor->run(layer, x, tokens, k, chosen, weights, target); !s) return s;
    if (i > 0)
      for (size_t j = 0; j < share.size(); ++j) out[j] += share[j];
  }
  return ok();
}

status in_process_experts::run_group(int first_expert, int last_expert, int layer, const float* x, int tokens, int k,
                                     const int* chosen, const float* weights, float* out) {
  std::shared_ptr<expert_executor> executor;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [name, e] : groups_)
      if (e.first == first_expert && e.last == last_expert) {
        executor = e.executor;
        break;
      }
  }
  if (!executor)
    return error{"no expert group serves experts [" + std::to_string(first_expert) + ", " +
                 std::to_string(last_expert) + ") of layer " + std::to_string(layer) + " here"};
  return executor->run(layer, x, tokens, k, chosen, weights, out);
}

}  // namespace troupe
