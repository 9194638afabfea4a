#pragma once
// The rank map of expert parallelism across GPUs: where a GPU stage's MoE layers find each
// expert group of its replica. The group on the stage's own node runs in the stage's
// process, on its GPU; every group on another node is a rank of the stage's own NCCL
// communicator: rank 0 the stage, then those groups in the replica's `experts` order. A
// stage whose node holds every expert (a replica that lists no `experts` has a group of all
// on each stage's node) reaches none. (check_gpu_placements has seen to one group a node.)
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cluster/cluster_spec.hpp"

namespace troupe {

struct expert_rank {
  int group = 0;  // its index in the replica's `experts`
  std::string node;
  int first_expert = 0, last_expert = 0;  // [first, last)
};

struct stage_expert_ranks {
  int local_first = 0, local_last = 0;  // the experts in the stage's process, [first, last); empty: none
  std::vector<expert_rank> peers;       // rank r + 1 is peers[r]
};

// Stage `stage` of replica `r` of a model with `num_experts` experts.
stage_expert_ranks expert_ranks_of_stage(const replica_spec& r, size_t stage, int num_experts);

// The stages (their indices) that reach group `group` over NCCL.
std::vector<int> stages_reaching_group(const replica_spec& r, size_t group, int num_experts);

// What expert parallelism asks of one node of a replica: what its GPU serves and what it
// reaches elsewhere.
struct node_expert_ranks {
  std::vector<size_t> stage_peers;           // of each of its stages that reaches groups elsewhere: their number
  std::optional<std::pair<int, int>> group;  // its group's experts, [first, last)
  bool group_reached = false;                // by stages of other nodes, over NCCL
  bool spread() const { return !stage_peers.empty() || group_reached; }
};

node_expert_ranks expert_ranks_of_node(const replica_spec& r, const std::string& node, int num_experts);

}  // namespace troupe
