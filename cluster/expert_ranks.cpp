#include "cluster/expert_ranks.hpp"

namespace troupe {

stage_expert_ranks expert_ranks_of_stage(const replica_spec& r, size_t stage, int num_experts) {
  stage_expert_ranks ranks;
  const std::string& node = r.stages[stage].node;
  for (size_t g = 0; g < r.experts.size(); ++g) {
    const placement& p = r.experts[g];
    const int last = p.last.value_or(num_experts - 1) + 1;
    if (p.node == node) {
      ranks.local_first = p.first;
      ranks.local_last = last;
    } else {
      ranks.peers.push_back({int(g), p.node, p.first, last});
    }
  }
  if (ranks.local_first == 0 && ranks.local_last == num_experts) ranks.peers.clear();
  return ranks;
}

std::vector<int> stages_reaching_group(const replica_spec& r, size_t group, int num_experts) {
  std::vector<int> stages;
  for (size_t k = 0; k < r.stages.size(); ++k)
    for (const expert_rank& peer : expert_ranks_of_stage(r, k, num_experts).peers)
      if (peer.group == int(group)) stages.push_back(int(k));
  return stages;
}

node_expert_ranks expert_ranks_of_node(const replica_spec& r, const std::string& node, int num_experts) {
  node_expert_ranks ranks;
  for (size_t k = 0; k < r.stages.size(); ++k)
    if (r.stages[k].node == node)
      if (const size_t peers = expert_ranks_of_stage(r, k, num_experts).peers.size(); peers > 0)
        ranks.stage_peers.push_back(peers);
  for (size_t g = 0; g < r.experts.size(); ++g)
    if (r.experts[g].node == node) {
      ranks.group = {r.experts[g].first, r.experts[g].last.value_or(num_experts - 1) + 1};
      ranks.group_reached = !stages_reaching_group(r, g, num_experts).empty();
    }
  return ranks;
}

}  // namespace troupe
