#include "model/local_experts.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "model/layers.hpp"

namespace troupe {

status local_experts::run(int layer, const float* x, int tokens, int k, const int* chosen, const float* weights,
                          float* out) {
  // `layer` may come from another process (transport/expert_server.cpp): checked, not trusted.
  if (layer < 0 || size_t(layer) >= weights_.layers.size() ||
      weights_.layers[size_t(layer)].experts.size() < size_t(last_))
    return error{"layer " + std::to_string(layer) + " has no experts [" + std::to_string(first_) + ", " +
                 std::to_string(last_) + ")"};
  const auto& experts = weights_.layers[size_t(layer)].experts;
  const int64_t hidden = weights_.embed.cols;
  // Bucket (token, weight) pairs by expert, then run each expert once on its tokens so
  // its weights are read once per step, not once per token.
  std::vector<std::vector<std::pair<int, float>>> routed(static_cast<size_t>(last_ - first_));
  for (int t = 0; t < tokens; ++t)
    for (int j = 0; j < k; ++j) {
      const int e = chosen[t * k + j];
      if (e >= first_ && e < last_) routed[size_t(e - first_)].emplace_back(t, weights[t * k + j]);
    }
  std::fill(out, out + tokens * hidden, 0.0f);
  std::vector<float> gathered, expert_out;
  for (int e = first_; e < last_; ++e) {
    const auto& list = routed[size_t(e - first_)];
    if (list.empty()) continue;
    const int n = int(list.size());
    gathered.resize(size_t(n * hidden));
    expert_out.resize(gathered.size());
    for (int i = 0; i < n; ++i)
      std::memcpy(gathered.data() + i * hidden, x + list[size_t(i)].first * hidden, sizeof(float) * size_t(hidden));
    mlp_block(experts[size_t(e)], gathered.data(), n, expert_out.data());
    for (int i = 0; i < n; ++i) {
      float* o = out + list[size_t(i)].first * hidden;
      const float* src = expert_out.data() + i * hidden;
      const float g = list[size_t(i)].second;
      for (int64_t d = 0; d < hidden; ++d) o[d] += g * src[d];
    }
  }
  return ok();
}

}  // namespace troupe
