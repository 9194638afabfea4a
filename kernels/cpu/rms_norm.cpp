#include "kernels/cpu/rms_norm.hpp"

#include <cmath>

namespace troupe::cpu {

void rms_norm(const float* x, const float* weight, float eps, int rows, int dim, float* out) {
#pragma omp parallel for schedule(static) if (int64_t(rows) * dim > 65536)
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + int64_t(r) * dim;
    float* yr = out + int64_t(r) * dim;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int i = 0; i < dim; ++i) sum += xr[i] * xr[i];
    const float scale = 1.0f / std::sqrt(sum / float(dim) + eps);
#pragma omp simd
    for (int i = 0; i < dim; ++i) yr[i] = weight[i] * (xr[i] * scale);
  }
}

}  // namespace troupe::cpu
