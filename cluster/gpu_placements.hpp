#pragma once
// What this version runs of a cluster's GPU placements. Each stage on a GPU node serves its
// own layers' experts from its own GPU's memory (the in-process gpu_experts), so a GPU
// replica takes no `experts` (read_cluster_spec gives it one group of all experts on every
// node with a stage): expert groups on other processes or GPUs would be expert parallelism
// across GPUs, which needs the NCCL all-to-all and is refused. A replica's stages run all
// on CPUs or all on GPUs, and a GPU node's process computes on one GPU, for one replica.
// Every error names the file and line.
#include "base/result.hpp"
#include "cluster/cluster_spec.hpp"

namespace troupe {

status check_gpu_placements(const cluster_spec& spec);

}  // namespace troupe
