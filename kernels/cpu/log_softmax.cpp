#include "kernels/cpu/log_softmax.hpp"

#include <algorithm>
#include <cmath>

namespace troupe::cpu {

void log_softmax(const float* x, int n, float* out) {
  const float max_x = *std::max_element(x, x + n);
  double total = 0.0;
  for (int i = 0; i < n; ++i) total += std::exp(double(x[i]) - max_x);
  const float log_total = float(std::log(total)) + max_x;
  for (int i = 0; i < n; ++i) out[i] = x[i] - log_total;
}

}  // namespace troupe::cpu
