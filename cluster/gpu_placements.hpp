#pragma once
// What this version runs of a cluster's GPU placements. A replica's stages run all on CPUs
// or all on GPUs. On GPUs a replica that lists no `experts` gets one group of all experts
// on every node with a stage (read_cluster_spec), each stage serving its own layers'
// experts from its own GPU. One that lists them runs expert parallelism across GPUs: a
// stage computes the group on its own node in place and reaches the groups on other nodes
// over NCCL (cluster/expert_ranks.hpp), so every group is on a GPU node, a node holds at
// most one group of a replica (one NCCL rank per GPU), and a replica has at most 8 groups.
// A GPU node's process computes on one GPU (its stages and group share it), for one
// replica. Every error names the file and line.
#include "base/result.hpp"
#include "cluster/cluster_spec.hpp"

namespace troupe {

// The most expert groups of a GPU replica: a token's rows are combined from at most this
// many ranks (cuda::moe_combine_max_parts).
inline constexpr size_t max_gpu_expert_groups = 8;

status check_gpu_placements(const cluster_spec& spec);

}  // namespace troupe
