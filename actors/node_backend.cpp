#include "actors/node_backend.hpp"

#include <algorithm>

#ifdef TROUPE_WITH_CUDA
#include "model/cuda/gpu_backend.hpp"
#endif

namespace troupe {
namespace {

// The GPU of the node's stages (check_gpu_placements sees that they share one), or its
// first when it has none; its number of stages and of their layers.
struct node_share {
  int gpu = 0;
  int stages = 0;
  int layers = 0;
};

node_share share_of(const cluster_spec& spec, const node_spec& node, int num_layers) {
  node_share share{node.gpus.front(), 0, 0};
  for (const replica_spec& r : spec.replicas)
    for (const placement& p : r.stages) {
      if (p.node != node.name) continue;
      if (p.gpu) share.gpu = *p.gpu;
      ++share.stages;
      share.layers += p.last.value_or(num_layers - 1) + 1 - p.first;
    }
  return share;
}

#ifdef TROUPE_WITH_CUDA
// Why this machine cannot compute on `gpu`; empty when it can.
std::string lacking(int gpu) {
  const int devices = visible_cuda_devices();
  if (gpu < devices) return "";
  if (devices == 0) return "this machine has no CUDA device (or none visible)";
  return cuda_devices_text(devices);
}
#endif

}  // namespace

result<node_backend> make_node_backend(const cluster_spec& spec, int node, backend_options options) {
  const node_spec& me = spec.nodes[size_t(node)];
  if (me.gpus.empty()) {
    auto b = make_cpu_node_backend(options);
    if (!b) return b.err();
    return node_backend{std::move(b->backend), std::move(b->groups), std::move(b->make_runner_over), "cpu"};
  }
  auto config = load_model_config(options.model_dir);
  if (!config) return config.err();
  const node_share share = share_of(spec, me, config->num_layers);
  const std::string device = "cuda:" + std::to_string(share.gpu);
  const std::string where =
      spec.file.string() + ":" + std::to_string(me.line) + ": node " + me.name + " computes on " + device + ", but ";
#ifdef TROUPE_WITH_CUDA
  if (auto why = lacking(share.gpu); !why.empty()) return error{where + why};
  options.device = share.gpu;
  options.pipeline_stages = std::max(share.stages, 1);
  options.kv_layers = share.layers;
  auto b = make_gpu_backend(options);
  if (!b) return error{spec.file.string() + ":" + std::to_string(me.line) + ": node " + me.name + " on " + device + ": " +
                       b.err().message};
  return node_backend{std::move(*b), nullptr, {}, device};
#else
  return error{where + "this build of troupe has no CUDA (nvcc was not found when it was configured)"};
#endif
}

}  // namespace troupe
