#pragma once

namespace troupe::cpu {

// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight * silu(z[r]), for `rows` rows of `dim`:
// the output norm of Gated DeltaNet layers, gated by their z projection. out may be x.
void gated_rms_norm(const float* x, const float* z, const float* weight, float eps, int rows, int dim, float* out);

}  // namespace troupe::cpu
