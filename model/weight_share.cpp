#include "model/weight_share.hpp"

#include <algorithm>

namespace troupe {

bool weight_share::holds_layer(int layer) const {
  return everything || std::any_of(stage_layers.begin(), stage_layers.end(),
                                   [layer](const auto& r) { return layer >= r.first && layer < r.second; });
}

bool weight_share::holds_layers(int first, int last) const {
  for (int i = first; i < last; ++i)
    if (!holds_layer(i)) return false;
  return true;
}

std::pair<int, int> weight_share::experts_of(int layer, const model_config& c) const {
  if (!c.is_moe_layer(layer)) return {0, 0};
  if (everything) return {0, c.num_experts};
  if (group_experts) return *group_experts;
  return holds_layer(layer) ? std::pair{0, c.num_experts} : std::pair{0, 0};
}

bool weight_share::holds_embedding(const model_config& c) const {
  return holds_layer(0) || (c.tie_word_embeddings && holds_lm_head(c));
}

bool weight_share::holds_lm_head(const model_config& c) const { return holds_layer(c.num_layers - 1); }

std::string weight_share::text() const {
  if (everything) return "every weight";
  std::string out;
  for (const auto& [first, last] : stage_layers)
    out += (out.empty() ? "layers " : ", ") + std::to_string(first) + "-" + std::to_string(last - 1);
  if (out.empty()) out = "no layer";
  if (group_experts && group_experts->first < group_experts->second)
    out += " and experts " + std::to_string(group_experts->first) + "-" + std::to_string(group_experts->second - 1) +
           " of every layer";
  else if (group_experts)
    out += " and no expert";
  return out;
}

}  // namespace troupe
