#pragma once
// A stage's MoE dispatch to expert groups spread over the processes of a cluster: each
// group of an ordered list is either served in this process (its range of the process's
// in_process_experts) or by another node's expert_server, over the transport. A step
// sends each remote group its request first, computes the local groups meanwhile, then
// takes the replies, and sums the shares in list order as in_process_experts sums its
// groups: a split over processes gives the same bits as the same split in one process.
// A group that is not attached, a peer that is gone, or a reply not back within the
// timeout fails the step with an error naming the group; a reply that comes after its
// step failed is never taken for a later one (every request has its own sequence).
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "model/expert_executor.hpp"
#include "transport/in_process_experts.hpp"
#include "transport/transport.hpp"

namespace troupe {

class remote_experts final : public expert_executor {
 public:
  struct group {
    int first_expert = 0, last_expert = 0;  // [first, last)
    std::optional<int> peer;                // the serving node's peer id; none: this process
  };

  // `node` is this process's index in the cluster (the sender of its requests); `local`
  // serves the groups without a peer and may be null when there are none.
  remote_experts(std::shared_ptr<transport> transport, std::shared_ptr<in_process_experts> local,
                 std::vector<group> groups, uint16_t node, int hidden_size, std::chrono::milliseconds timeout);

  status run(int layer, const float* x, int tokens, int k, const int* chosen, const float* weights,
             float* out) override;

 private:
  std::shared_ptr<transport> transport_;
  std::shared_ptr<in_process_experts> local_;
  std::vector<group> groups_;
  uint16_t node_;
  int hidden_;
  std::chrono::milliseconds timeout_;
};

}  // namespace troupe
