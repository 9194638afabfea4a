#include "engine/node_backend.hpp"

#include <algorithm>

#include "cluster/node_weights.hpp"

#ifdef TROUPE_WITH_CUDA
#include "model/cuda/gpu_backend.hpp"
#endif
#ifdef TROUPE_WITH_NCCL
#include "transport/nccl_expert_server.hpp"
#include "transport/nccl_experts.hpp"
#endif

namespace troupe {
namespace {

// The GPU of the node's stages and expert group (check_gpu_placements sees that they share
// one), or its first when it has none; its number of stages and of their layers.
struct node_share {
  int gpu = 0;
  int stages = 0;
  int layers = 0;
};

node_share share_of(const cluster_spec& spec, const node_spec& node, int num_layers) {
  node_share share{node.gpus.front(), 0, 0};
  for (const replica_spec& r : spec.replicas) {
    for (const placement& g : r.experts)
      if (g.node == node.name && g.gpu) share.gpu = *g.gpu;
    for (const placement& p : r.stages) {
      if (p.node != node.name) continue;
      if (p.gpu) share.gpu = *p.gpu;
      ++share.stages;
      share.layers += p.last.value_or(num_layers - 1) + 1 - p.first;
    }
  }
  return share;
}

#ifdef TROUPE_WITH_CUDA
// What expert parallelism across GPUs asks of the node: the peers of each of its stages
// that reach groups elsewhere, and its groups that stages elsewhere reach.
struct expert_parallel_share {
  std::vector<size_t> stage_peers;
  std::vector<std::pair<int, int>> served_groups;  // [first, last)
  bool any() const { return !stage_peers.empty() || !served_groups.empty(); }
};

expert_parallel_share expert_parallelism_of(const cluster_spec& spec, const node_spec& node, int num_experts) {
  expert_parallel_share share;
  for (const replica_spec& r : spec.replicas) {
    const node_expert_ranks e = expert_ranks_of_node(r, node.name, num_experts);
    share.stage_peers.insert(share.stage_peers.end(), e.stage_peers.begin(), e.stage_peers.end());
    if (e.group_reached) share.served_groups.push_back(*e.group);
  }
  return share;
}

// Why this machine cannot compute on `gpu`; empty when it can.
std::string lacking(int gpu) {
  const int devices = visible_cuda_devices();
  if (gpu < devices) return "";
  if (devices == 0) return "this machine has no CUDA device (or none visible)";
  return cuda_devices_text(devices);
}
#endif

#ifdef TROUPE_WITH_NCCL
// The runners and servers of expert parallelism on the node's GPU. The buffers hold a
// step's most tokens; joining may take a step's timeout (NCCL's first communicator in a
// process takes seconds), a step's transfers a node's connection timeout, after which a
// peer is dead as the control plane counts it.
void add_expert_parallelism(node_backend& b, const gpu_backend_parts& parts, const cluster_spec& spec,
                            const backend_options& options) {
  const int device = options.device, max_tokens = std::max(options.max_num_batched_tokens, options.max_num_seqs);
  const auto join_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(spec.cluster.step_timeout);
  const auto wait_timeout = spec.cluster.connection_timeout;
  const model_config& c = parts.weights->config;
  b.make_gpu_runner_over = [with = parts.make_runner_with, device, max_tokens, join_timeout, wait_timeout,
                            hidden = c.hidden_size, k = c.num_experts_per_tok](
                               int first, int last, int stage, const stage_expert_ranks& ranks,
                               std::shared_ptr<expert_peers> peers) -> result<std::unique_ptr<step_runner>> {
    nccl_experts::options o{stage, device,       max_tokens,  hidden, k, {ranks.local_first, ranks.local_last},
                            {},    join_timeout, wait_timeout};
    for (const expert_rank& p : ranks.peers) o.peers.push_back({p.first_expert, p.last_expert});
    auto link = nccl_experts::create(std::move(o), std::move(peers));
    if (!link) return link.err();
    return with(first, last, std::shared_ptr<gpu_remote_experts>(std::move(*link)));
  };
  b.make_expert_server = [weights = parts.weights, device, max_tokens, join_timeout, wait_timeout](
                             int first, int last) -> result<std::unique_ptr<remote_expert_server>> {
    auto server = nccl_expert_server::create(weights, {first, last, device, max_tokens, join_timeout, wait_timeout});
    if (!server) return server.err();
    return std::unique_ptr<remote_expert_server>(std::move(*server));
  };
}

size_t expert_parallel_bytes(const expert_parallel_share& share, const model_config& c,
                             const backend_options& options) {
  const int max_tokens = std::max(options.max_num_batched_tokens, options.max_num_seqs);
  size_t bytes = 0;
  for (size_t peers : share.stage_peers)
    bytes += nccl_experts::buffer_bytes(max_tokens, c.hidden_size, c.num_experts_per_tok, peers);
  for (const auto& [first, last] : share.served_groups)
    bytes += nccl_expert_server::buffer_bytes(c, max_tokens, first, last);
  return bytes;
}
#endif

}  // namespace

result<node_backend> make_node_backend(const cluster_spec& spec, int node, backend_options options) {
  const node_spec& me = spec.nodes[size_t(node)];
  if (me.gpus.empty()) {
    auto b = make_cpu_node_backend(options);
    if (!b) return b.err();
    return node_backend{std::move(b->backend), std::move(b->groups), std::move(b->make_runner_over), {}, {}, "cpu"};
  }
  auto config = load_model_config(options.model_dir);
  if (!config) return config.err();
  const node_share share = share_of(spec, me, config->num_layers);
  const std::string device = "cuda:" + std::to_string(share.gpu);
  const std::string where =
      spec.file.string() + ":" + std::to_string(me.line) + ": node " + me.name + " computes on " + device + ", but ";
#ifdef TROUPE_WITH_CUDA
  if (auto why = lacking(share.gpu); !why.empty()) return error{where + why};
  const expert_parallel_share experts = expert_parallelism_of(spec, me, config->num_experts);
#ifndef TROUPE_WITH_NCCL
  if (experts.any())
    return error{where + "its replica's expert groups are spread over GPUs, and this build of troupe has no NCCL"};
#endif
  options.device = share.gpu;
  options.pipeline_stages = share.stages;  // 0: it only serves experts, and holds no KV cache
  options.kv_layers = share.layers;
  options.share = weights_of_node(spec, me, *config);
#ifdef TROUPE_WITH_NCCL
  options.reserved_bytes = expert_parallel_bytes(experts, *config, options);
#endif
  auto parts = make_gpu_backend_parts(options);
  if (!parts)
    return error{spec.file.string() + ":" + std::to_string(me.line) + ": node " + me.name + " on " + device + ": " +
                 parts.err().message};
  node_backend b{std::move(parts->backend), nullptr, {}, {}, {}, device};
#ifdef TROUPE_WITH_NCCL
  if (experts.any()) add_expert_parallelism(b, *parts, spec, options);
#endif
  return b;
#else
  return error{where + "this build of troupe has no CUDA (nvcc was not found when it was configured)"};
#endif
}

}  // namespace troupe
