#pragma once

namespace troupe::cpu {

// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight, for `rows` rows of `dim`. out may be x.
void rms_norm(const float* x, const float* weight, float eps, int rows, int dim, float* out);

}  // namespace troupe::cpu
