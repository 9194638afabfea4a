#include "cluster/node_weights.hpp"

#include "cluster/expert_ranks.hpp"

namespace troupe {

weight_share weights_of_node(const cluster_spec& spec, const node_spec& node, const model_config& c) {
  weight_share share;
  share.everything = false;
  for (const replica_spec& r : spec.replicas) {
    for (const placement& p : r.stages)
      if (p.node == node.name) share.stage_layers.push_back({p.first, p.last.value_or(c.num_layers - 1) + 1});
    // Where the node's parts reach, or are reached by, groups on other GPUs: its group alone.
    if (const node_expert_ranks e = expert_ranks_of_node(r, node.name, c.num_experts); e.spread())
      share.group_experts = e.group.value_or(std::pair{0, 0});
  }
  return share;
}

}  // namespace troupe
