#include "cluster/gpu_placements.hpp"

#include <map>
#include <string>

#include "cluster/replica_layout.hpp"

namespace troupe {
namespace {

std::string where(const cluster_spec& spec, int line) { return spec.file.string() + ":" + std::to_string(line) + ": "; }

std::string device_text(const placement& p) {
  return p.gpu ? "GPU " + std::to_string(*p.gpu) + " of node " + p.node : "the CPU of node " + p.node;
}

// Read_cluster_spec gives a replica that lists no `experts` groups at its header's line.
bool listed(const replica_spec& r, const placement& group) { return group.line != r.line; }

status check_replica(const cluster_spec& spec, const replica_spec& r) {
  const std::string replica = "replica " + r.name + ": ";
  const placement& first = r.stages.front();
  for (const placement& s : r.stages)
    if (s.gpu.has_value() != first.gpu.has_value())
      return error{where(spec, s.line) + replica + "stage " + placement_text(s) + " computes on " + device_text(s) +
                   " but stage " + placement_text(first) + " on " + device_text(first) +
                   "; a replica's stages run all on GPUs or all on CPUs (mixing them is not supported)"};
  for (const placement& g : r.experts) {
    if (first.gpu && listed(r, g))
      return error{where(spec, g.line) + replica + "its stages run on GPUs, where each stage serves its own layers' " +
                   "experts from its own GPU, so leave `experts` out: expert group " + placement_text(g) +
                   " would be expert parallelism across GPUs, which is not supported yet (it needs the NCCL all-to-all)"};
    if (!first.gpu && g.gpu)
      return error{where(spec, g.line) + replica + "expert group " + placement_text(g) + " is on " + device_text(g) +
                   " but the replica's stages compute on CPUs; a replica runs all on GPUs or all on CPUs"};
  }
  return ok();
}

}  // namespace

status check_gpu_placements(const cluster_spec& spec) {
  for (const replica_spec& r : spec.replicas)
    if (auto s = check_replica(spec, r); !s) return s;
  // A GPU node's first stage, with its replica: every other stage there must share both.
  std::map<std::string, std::pair<const replica_spec*, const placement*>> first_stage;
  for (const replica_spec& r : spec.replicas)
    for (const placement& s : r.stages) {
      if (!s.gpu) continue;
      auto [at, fresh] = first_stage.try_emplace(s.node, &r, &s);
      if (fresh) continue;
      const auto& [other_replica, other] = at->second;
      const std::string before = " (line " + std::to_string(other->line) + ")";
      if (*other->gpu != *s.gpu)
        return error{where(spec, s.line) + "node " + s.node + " runs stage " + placement_text(s) + " of replica " +
                     r.name + " on GPU " + std::to_string(*s.gpu) + " and stage " + placement_text(*other) +
                     " of replica " + other_replica->name + before + " on GPU " + std::to_string(*other->gpu) +
                     "; a node's process computes on one GPU: give each GPU a [node.NAME] of its own"};
      if (other_replica != &r)
        return error{where(spec, s.line) + "node " + s.node + " runs stages of replica " + other_replica->name + before +
                     " and of replica " + r.name + "; a GPU node runs the stages of one replica (its GPU's experts " +
                     "serve one replica): give each replica GPU nodes of its own"};
    }
  return ok();
}

}  // namespace troupe
