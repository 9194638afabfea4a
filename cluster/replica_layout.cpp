#include "cluster/replica_layout.hpp"

#include <algorithm>

namespace troupe {
namespace {

std::string range_text(int first, int last) { return std::to_string(first) + "-" + std::to_string(last); }

std::string gpus_text(const std::vector<int>& gpus) {
  std::string text;
  for (int g : gpus) text += (text.empty() ? "cuda:" : ",") + std::to_string(g);
  return text.empty() ? "cpu" : text;
}

// The node exists, the GPU is one of its devices (its first when none is given), and the
// transport can reach it.
status place(const ini_file& file, const cluster_spec& spec, const std::string& prefix, placement& p) {
  const std::string what = prefix + placement_text(p);
  const node_spec* node = spec.node(p.node);
  if (!node) {
    std::string names;
    for (const auto& n : spec.nodes) names += (names.empty() ? "" : ", ") + n.name;
    return error{file.where(p.line) + what + " is on node `" + p.node + "`, which no [node." + p.node +
                 "] defines (nodes: " + names + ")"};
  }
  if (node->gpus.empty() && p.gpu)
    return error{file.where(p.line) + what + " asks for GPU " + std::to_string(*p.gpu) + " but node " + p.node +
                 " computes on its CPU (devices = cpu, line " + std::to_string(node->line) + ")"};
  if (!node->gpus.empty()) {
    if (!p.gpu) p.gpu = node->gpus.front();
    if (std::find(node->gpus.begin(), node->gpus.end(), *p.gpu) == node->gpus.end())
      return error{file.where(p.line) + what + " asks for GPU " + std::to_string(*p.gpu) +
                   ", which is not among node " + p.node + "'s devices (" + gpus_text(node->gpus) + ", line " +
                   std::to_string(node->line) + ")"};
  }
  if (spec.cluster.transport == transport_kind::nccl && node->gpus.empty())
    return error{file.where(p.line) + what + ": transport nccl moves activations GPU to GPU, but node " + p.node +
                 " computes on its CPU (use transport = ucx, or give it GPUs)"};
  return ok();
}

// `parts` in the order they must run (stages as listed, groups by first): each starts where
// the one before ends, the first at 0.
status check_contiguous(const ini_file& file, const std::string& replica, const std::vector<placement>& parts,
                        const std::string& part, const std::string& units, const std::string& order_hint) {
  int next = 0;
  for (const auto& p : parts) {
    const std::string where = file.where(p.line) + "replica " + replica + ": ";
    if (p.first > next)
      return error{where + "no " + part + " holds " + units + " " + range_text(next, p.first - 1) + " (before " +
                   placement_text(p) + ")" + order_hint};
    if (p.first < next)
      return error{where + part + " " + placement_text(p) + " overlaps " + units + " " +
                   range_text(p.first, std::min(p.last.value_or(next - 1), next - 1)) + " of the " + part +
                   "s before it" + order_hint};
    if (!p.last) break;  // a default that runs through the model's last
    next = *p.last + 1;
  }
  return ok();
}

// A replica that lists no `experts`: on the CPU, one group beside its first stage, which
// the other stages reach over the transport; on GPUs, where each stage runs its own layers'
// experts from its own GPU's memory, one group of all experts on every node with a stage.
void default_expert_groups(replica_spec& r) {
  const bool on_gpus =
      std::all_of(r.stages.begin(), r.stages.end(), [](const placement& p) { return p.gpu.has_value(); });
  for (const placement& s : r.stages) {
    const bool placed =
        std::any_of(r.experts.begin(), r.experts.end(), [&](const placement& g) { return g.node == s.node; });
    if (!placed) r.experts.push_back({s.node, s.gpu, 0, std::nullopt, r.line});
    if (!on_gpus) break;
  }
}

status lay_out(const ini_file& file, const cluster_spec& spec, replica_spec& r) {
  if (r.stages.empty()) {
    if (spec.replicas.size() > 1)
      return error{file.where(r.line) + "[replica." + r.name + "] needs `stages` when the file has several replicas"};
    r.stages.push_back({spec.gateway.node, std::nullopt, 0, std::nullopt, r.line});
  }
  // The ranges first, while the placements read as written.
  if (auto s = check_contiguous(file, r.name, r.stages, "stage", "layers",
                                "; list stages in pipeline order, each starting where the one before ends");
      !s)
    return s;
  auto groups = r.experts;
  std::stable_sort(groups.begin(), groups.end(),
                   [](const placement& a, const placement& b) { return a.first < b.first; });
  if (auto s = check_contiguous(file, r.name, groups, "expert group", "experts", ""); !s) return s;
  const std::string prefix = "replica " + r.name + ": ";
  for (auto& p : r.stages)
    if (auto s = place(file, spec, prefix + "stage ", p); !s) return s;
  if (r.experts.empty()) default_expert_groups(r);
  for (auto& p : r.experts)
    if (auto s = place(file, spec, prefix + "expert group ", p); !s) return s;
  return ok();
}

}  // namespace

std::string placement_text(const placement& p) {
  std::string text = p.node + ":";
  if (p.gpu) text += std::to_string(*p.gpu) + ":";
  return text + std::to_string(p.first) + "-" + (p.last ? std::to_string(*p.last) : "");
}

status lay_out_replicas(const ini_file& file, cluster_spec& spec) {
  if (!spec.is_cluster) return ok();
  if (spec.replicas.empty()) spec.replicas.push_back({"main", {}, {}, 1, spec.node(spec.gateway.node)->line});
  bool some_traffic = false;
  for (auto& r : spec.replicas) {
    if (auto s = lay_out(file, spec, r); !s) return s;
    some_traffic = some_traffic || (r.start && r.weight > 0);
  }
  if (!some_traffic)
    return error{
        file.where(spec.replicas.back().line) +
        "no replica that starts has a weight above 0 (start = yes, weight above 0), so none would get traffic"};
  return ok();
}

}  // namespace troupe
