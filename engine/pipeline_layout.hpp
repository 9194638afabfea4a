#pragma once
// How an engine's layers are split into pipeline stages, each a contiguous range.
#include <vector>

#include "base/result.hpp"

namespace troupe {

struct layer_range {
  int first = 0;
  int last = 0;  // exclusive
};

// The stages' layer ranges, in pipeline order: `ranges` when given, checked (each
// non-empty, each starting where the previous ends, from layer 0 to the model's last),
// else `stages` ranges as even as `num_layers` allows (the first ones a layer longer).
result<std::vector<layer_range>> pipeline_layout(int stages, const std::vector<layer_range>& ranges, int num_layers);

}  // namespace troupe
