#pragma once
// The weights a GPU node of a cluster loads: what its own stages and expert group compute.
#include "cluster/cluster_spec.hpp"
#include "model/model_config.hpp"
#include "model/weight_share.hpp"

namespace troupe {

// Its stages' layers; and every expert of those layers, or, when its replica spreads its
// experts over GPUs, the experts of the node's own group (of every layer: it serves them to
// the other nodes' stages too), none when it has no group.
weight_share weights_of_node(const cluster_spec& spec, const node_spec& node, const model_config& c);

}  // namespace troupe
