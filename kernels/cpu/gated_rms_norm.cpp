#include "kernels/cpu/gated_rms_norm.hpp"

#include <cmath>
#include <cstdint>

namespace troupe::cpu {

void gated_rms_norm(const float* x, const float* z, const float* weight, float eps, int rows, int dim, float* out) {
#pragma omp parallel for schedule(static) if (int64_t(rows) * dim > 65536)
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + int64_t(r) * dim;
    const float* zr = z + int64_t(r) * dim;
    float* yr = out + int64_t(r) * dim;
    float sum = 0.0f;
    for (int i = 0; i < dim; ++i) sum += xr[i] * xr[i];
    const float scale = 1.0f / std::sqrt(sum / float(dim) + eps);
    for (int i = 0; i < dim; ++i) yr[i] = weight[i] * (xr[i] * scale) * (zr[i] / (1.0f + std::exp(-zr[i])));
  }
}

}  // namespace troupe::cpu
