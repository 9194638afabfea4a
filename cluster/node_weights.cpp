#include "cluster/node_weights.hpp"

#include "cluster/expert_ranks.hpp"

namespace troupe {

weight_share weights_of_node(const cluster_spec& spec, const node_spec& node, const model_config& c) {
  weight_share share;
  share.everything = false;
  for (const replica_spec& r : spec.replicas) {
    bool spread = false;  // whether the node's parts reach, or are reached by, groups on other GPUs
    for (size_t k = 0; k < r.stages.size(); ++k) {
      if (r.stages[k].node != node.name) continue;
      share.stage_layers.push_back({r.stages[k].first, r.stages[k].last.value_or(c.num_layers - 1) + 1});
      spread |= !expert_ranks_of_stage(r, k, c.num_experts).peers.empty();
    }
    std::pair<int, int> group{0, 0};
    for (size_t g = 0; g < r.experts.size(); ++g) {
      if (r.experts[g].node != node.name) continue;
      group = {r.experts[g].first, r.experts[g].last.value_or(c.num_experts - 1) + 1};
      spread |= !stages_reaching_group(r, g, c.num_experts).empty();
    }
    if (spread) share.group_experts = group;
  }
  return share;
}

}  // namespace troupe
