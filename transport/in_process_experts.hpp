#pragma once
// The in-process transport for MoE dispatch: expert groups in this process attach their
// expert range; a stage's MoE layer calls each group that holds a chosen expert directly,
// on the stage's own thread, and sums their shares. A range nobody serves (its group
// crashed and is restarting) fails the call, and with it the step. One group alone
// (run_group) serves the dispatches that reach this process over a transport.
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "model/expert_executor.hpp"

namespace troupe {

class in_process_experts final : public expert_executor {
 public:
  in_process_experts(int num_experts, int hidden_size) : num_experts_(num_experts), hidden_(hidden_size) {}

  void attach(const std::string& group, std::shared_ptr<expert_executor> executor, int first_expert, int last_expert);
  void detach(const std::string& group);

  int hidden_size() const { return hidden_; }

  status run(int layer, const float* x, int tokens, int k, const int* chosen, const float* weights,
             float* out) override;
  // Writes to `out` the share of the group attached for exactly [first_expert, last_expert),
  // as run() computes it for that group; an error naming the range when none is attached.
  status run_group(int first_expert, int last_expert, int layer, const float* x, int tokens, int k, const int* chosen,
                   const float* weights, float* out);

 private:
  struct entry {
    std::shared_ptr<expert_executor> executor;
    int first, last;
  };
  int num_experts_, hidden_;
  std::mutex mutex_;
  std::map<std::string, entry> groups_;
};

}  // namespace troupe
