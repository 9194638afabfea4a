#include <algorithm>
#include <string>

#include "cluster/cluster_spec.hpp"
#include "cluster/gpu_placements.hpp"

namespace troupe {
namespace {

// The parts are contiguous from 0 (read_cluster_spec saw to that), so only where they end
// is left to compare; a default part runs through the model's last and always fits.
status check_cover(const cluster_spec& spec, const replica_spec& r, const std::vector<placement>& parts,
                   const char* what, const char* key, const char* units, int count) {
  int last = -1, line = r.line;
  for (const auto& p : parts) {
    if (!p.last) return ok();
    last = std::max(last, *p.last);
    line = p.line;
  }
  if (last == count - 1) return ok();
  const std::string where = spec.file.string() + ":" + std::to_string(line) + ": replica " + r.name + ": ";
  if (count == 0) return error{where + "`" + key + "` lists " + units + " but the model has none"};
  return error{where + what + " cover " + units + " 0-" + std::to_string(last) + " but the model has " +
               std::to_string(count) + " (0-" + std::to_string(count - 1) + ")"};
}

}  // namespace

status validate_against_model(const cluster_spec& spec, const model_config& model) {
  for (const auto& r : spec.replicas) {
    if (auto s = check_cover(spec, r, r.stages, "stages", "stages", "layers", model.num_layers); !s) return s;
    if (auto s = check_cover(spec, r, r.experts, "expert groups", "experts", "experts", model.num_experts); !s)
      return s;
  }
  return ok();
}

result<cluster_with_model> read_cluster_with_model(const std::filesystem::path& file) {
  auto spec = read_cluster_spec(file);
  if (!spec) return spec.err();
  if (auto runs = check_gpu_placements(*spec); !runs) return runs.err();
  auto model = load_model_config(spec->model.path);
  if (!model) return model.err();
  if (auto fits = validate_against_model(*spec, *model); !fits) return fits.err();
  return cluster_with_model{std::move(*spec), std::move(*model)};
}

}  // namespace troupe
