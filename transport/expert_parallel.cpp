#include "transport/expert_parallel.hpp"

namespace troupe {

expert_layer_bytes expert_layer_transfers(int tokens, int hidden, int k) {
  const size_t t = size_t(tokens), h = size_t(hidden), pairs = t * size_t(k);
  return {t * h * 2, pairs * sizeof(int32_t), pairs * sizeof(float), pairs * h * sizeof(float)};
}

}  // namespace troupe
