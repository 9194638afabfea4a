#include "engine/pipeline_layout.hpp"

#include <string>

namespace troupe {
namespace {

std::string layers_text(const layer_range& r) {
  std::string text = "[";
  text += std::to_string(r.first) + ", " + std::to_string(r.last) + ")";
  return text;
}

status check(const std::vector<layer_range>& ranges, int num_layers) {
  int next = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const std::string stage = "pipeline stage " + std::to_string(i) + " (layers " + layers_text(ranges[i]) + ")";
    if (ranges[i].first != next)
      return error{stage + " must start at layer " + std::to_string(next) +
                   (i == 0 ? "" : ", where the stage before it ends")};
    if (ranges[i].last <= ranges[i].first) return error{stage + " holds no layer"};
    next = ranges[i].last;
  }
  if (next != num_layers)
    return error{"the pipeline stages cover layers [0, " + std::to_string(next) + "); this model has " +
                 std::to_string(num_layers)};
  return ok();
}

}  // namespace

result<std::vector<layer_range>> pipeline_layout(int stages, const std::vector<layer_range>& ranges, int num_layers) {
  if (!ranges.empty()) {
    if (auto s = check(ranges, num_layers); !s) return s.err();
    return ranges;
  }
  if (stages < 1) return error{std::to_string(stages) + " pipeline stages: there must be at least one"};
  if (stages > num_layers)
    return error{std::to_string(stages) + " pipeline stages: this model has " + std::to_string(num_layers) +
                 " layers and each stage needs at least one"};
  std::vector<layer_range> out;
  for (int i = 0, first = 0; i < stages; ++i) {
    const int count = num_layers / stages + (i < num_layers % stages ? 1 : 0);
    out.push_back({first, first + count});
    first += count;
  }
  return out;
}

}  // namespace troupe
