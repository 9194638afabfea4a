#pragma once
// What a cluster node's process computes with, chosen from cluster.conf: its CPU (a node
// without `devices`), whose expert groups every node's stages reach through the transport,
// or one GPU (the one its stages are placed on), whose stages run their layers' experts
// from that GPU's memory, as `troupe serve --device cuda` does.
#include <memory>
#include <string>

#include "actors/cpu_backend.hpp"
#include "base/result.hpp"
#include "cluster/cluster_spec.hpp"

namespace troupe {

struct node_backend {
  compute_backend backend;
  // The CPU's: the expert groups this process holds, which other nodes reach through an
  // expert_server, and runners whose MoE layers go to the experts given (the replica's
  // groups wherever they run). Null on a GPU, whose runners are backend.make_runner's.
  std::shared_ptr<in_process_experts> groups;
  step_runner_over make_runner_over;
  std::string device;  // "cpu" or "cuda:N", for messages
};

// The backend of spec.nodes[node], from the file's [model] and [engine] (`options`) and its
// placements. A GPU node this machine lacks, or one in a build without CUDA, is an error
// that names the file's line.
result<node_backend> make_node_backend(const cluster_spec& spec, int node, backend_options options);

}  // namespace troupe
