#pragma once
// What a cluster node's process computes with, chosen from cluster.conf: its CPU (a node
// without `devices`), whose expert groups every node's stages reach through the transport,
// or one GPU (the one its stages and expert group are placed on). A GPU stage runs the
// experts of its own node's group from that GPU's memory, as `troupe serve --device cuda`
// does, and reaches a replica's groups on other GPUs over NCCL (expert parallelism).
#include <memory>
#include <string>

#include "base/result.hpp"
#include "cluster/cluster_spec.hpp"
#include "cluster/expert_ranks.hpp"
#include "engine/cpu_backend.hpp"
#include "transport/expert_parallel.hpp"

namespace troupe {

// A GPU stage's runner of layers [first, last) whose MoE layers reach the expert groups on
// other GPUs: its index in the pipeline, its rank map and its control plane to them.
using gpu_runner_over = std::function<result<std::unique_ptr<step_runner>>(
    int first_layer, int last_layer, int stage, const stage_expert_ranks& ranks, std::shared_ptr<expert_peers> peers)>;
// The server of a GPU group's experts [first, last) for stages of other processes.
using gpu_server_over = std::function<result<std::unique_ptr<remote_expert_server>>(int first_expert, int last_expert)>;

struct node_backend {
  compute_backend backend;
  // The CPU's: the expert groups this process holds, which other nodes reach through an
  // expert_server, and runners whose MoE layers go to the experts given (the replica's
  // groups wherever they run). Null on a GPU, whose runners are backend.make_runner's.
  std::shared_ptr<in_process_experts> groups;
  step_runner_over make_runner_over;
  // A GPU node's with expert parallelism across GPUs (its replica lists its groups); null
  // otherwise.
  gpu_runner_over make_gpu_runner_over;
  gpu_server_over make_expert_server;
  std::string device;  // "cpu" or "cuda:N", for messages
};

// The backend of spec.nodes[node], from the file's [model] and [engine] (`options`) and its
// placements. A GPU node this machine lacks, or one in a build without CUDA (or without
// NCCL, for expert parallelism), is an error that names the file's line.
result<node_backend> make_node_backend(const cluster_spec& spec, int node, backend_options options);

}  // namespace troupe
