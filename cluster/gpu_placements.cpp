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

status check_groups_on_gpus(const cluster_spec& spec, const replica_spec& r) {
  const std::string replica = "replica " + r.name + ": ";
  std::map<std::string, const placement*> group_of_node;
  for (const placement& g : r.experts) {
    if (!g.gpu)
      return error{where(spec, g.line) + replica + "expert group " + placement_text(g) + " is on " + device_text(g) +
                   " but the replica's stages compute on GPUs; a replica runs all on GPUs or all on CPUs"};
    auto [at, fresh] = group_of_node.try_emplace(g.node, &g);
    if (!fresh)
      return error{where(spec, g.line) + replica + "node " + g.node + " holds expert groups " +
                   placement_text(*at->second) + " and " + placement_text(g) + "; a GPU node holds one expert group " +
                   "of a replica (one NCCL rank per GPU): give each group a [node.NAME] of its own"};
  }
  if (r.experts.size() > max_gpu_expert_groups)
    return error{where(spec, r.experts.back().line) + replica + std::to_string(r.experts.size()) +
                 " expert groups on GPUs; expert parallelism across GPUs takes at most " +
                 std::to_string(max_gpu_expert_groups)};
  return ok();
}

status check_replica(const cluster_spec& spec, const replica_spec& r) {
  const std::string replica = "replica " + r.name + ": ";
  const placement& first = r.stages.front();
  for (const placement& s : r.stages)
    if (s.gpu.has_value() != first.gpu.has_value())
      return error{where(spec, s.line) + replica + "stage " + placement_text(s) + " computes on " + device_text(s) +
                   " but stage " + placement_text(first) + " on " + device_text(first) +
                   "; a replica's stages run all on GPUs or all on CPUs (mixing them is not supported)"};
  if (first.gpu) return check_groups_on_gpus(spec, r);
  for (const placement& g : r.experts)
    if (g.gpu)
      return error{where(spec, g.line) + replica + "expert group " + placement_text(g) + " is on " + device_text(g) +
                   " but the replica's stages compute on CPUs; a replica runs all on GPUs or all on CPUs"};
  return ok();
}

// A GPU placement of a replica: a stage or an expert group.
struct gpu_part {
  const replica_spec* replica;
  const placement* where;
  bool stage;
  std::string text() const { return (stage ? "stage " : "expert group ") + placement_text(*where); }
};

}  // namespace

status check_gpu_placements(const cluster_spec& spec) {
  for (const replica_spec& r : spec.replicas)
    if (auto s = check_replica(spec, r); !s) return s;
  // A GPU node's first part, with its replica: every other part there must share both.
  // Stages come first, and a group the file does not list shares its stage's node and GPU.
  std::map<std::string, gpu_part> first_part;
  for (const replica_spec& r : spec.replicas)
    for (const bool stage : {true, false})
      for (const placement& p : stage ? r.stages : r.experts) {
        if (!p.gpu || (!stage && !listed(r, p))) continue;
        const gpu_part part{&r, &p, stage};
        auto [at, fresh] = first_part.try_emplace(p.node, part);
        if (fresh) continue;
        const gpu_part& other = at->second;
        const std::string before = " (line " + std::to_string(other.where->line) + ")";
        if (*other.where->gpu != *p.gpu)
          return error{where(spec, p.line) + "node " + p.node + " runs " + part.text() + " of replica " + r.name +
                       " on GPU " + std::to_string(*p.gpu) + " and " + other.text() + " of replica " +
                       other.replica->name + before + " on GPU " + std::to_string(*other.where->gpu) +
                       "; a node's process computes on one GPU: give each GPU a [node.NAME] of its own"};
        if (other.replica != &r)
          return error{where(spec, p.line) + "node " + p.node + " runs " + (stage && other.stage ? "stages" : "parts") +
                       " of replica " + other.replica->name + before + " and of replica " + r.name +
                       "; a GPU node runs the " + (stage && other.stage ? "stages" : "parts") +
                       " of one replica (its GPU's experts serve one replica): give each replica GPU nodes of its own"};
      }
  return ok();
}

}  // namespace troupe
