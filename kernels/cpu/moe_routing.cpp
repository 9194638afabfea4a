#include "kernels/cpu/moe_routing.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace troupe::cpu {

void route_top_k(const float* logits, int experts, int k, bool normalize, int* chosen, float* weights) {
  std::vector<float> probs(logits, logits + experts);
  const float max_logit = *std::max_element(probs.begin(), probs.end());
  float total = 0.0f;
  for (float& p : probs) total += (p = std::exp(p - max_logit));
  for (float& p : probs) p /= total;
  std::vector<int> order(static_cast<size_t>(experts));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
    return probs[size_t(a)] > probs[size_t(b)] || (probs[size_t(a)] == probs[size_t(b)] && a < b);
  });
  float picked = 0.0f;
  for (int i = 0; i < k; ++i) picked += probs[size_t(order[size_t(i)])];
  for (int i = 0; i < k; ++i) {
    chosen[i] = order[size_t(i)];
    weights[i] = normalize ? probs[size_t(chosen[i])] / picked : probs[size_t(chosen[i])];
  }
}

}  // namespace troupe::cpu
