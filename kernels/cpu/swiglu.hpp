#pragma once
#include <cstdint>

namespace troupe::cpu {

// out[i] = silu(gate[i]) * up[i]; out may be gate.
void swiglu(const float* gate, const float* up, int64_t n, float* out);

}  // namespace troupe::cpu
