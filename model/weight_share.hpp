#pragma once
// Which of a model's weights one process loads. `troupe serve` loads them all; a GPU
// cluster node only what its own stages and expert group compute, so a model split over
// GPUs takes each of them only its part of the memory.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/model_config.hpp"

namespace troupe {

struct weight_share {
  bool everything = true;
  // Otherwise: the layers [first, last) of the process's stages (attention, norms, router,
  // dense MLP and shared expert of each; the embedding with layer 0, the final norm and
  // lm_head with the last layer)...
  std::vector<std::pair<int, int>> stage_layers;
  // ...and the routed experts [first, last) of every MoE layer (its expert group, under
  // expert parallelism); none: every expert of its stages' layers.
  std::optional<std::pair<int, int>> group_experts;

  bool holds_layer(int layer) const;
  bool holds_layers(int first, int last) const;
  // The routed experts [first, last) held of `layer` (first == last: none).
  std::pair<int, int> experts_of(int layer, const model_config& c) const;
  bool holds_embedding(const model_config& c) const;
  bool holds_lm_head(const model_config& c) const;
  // "layers 0-23 and experts 0-63 of every layer", for messages.
  std::string text() const;
};

}  // namespace troupe
