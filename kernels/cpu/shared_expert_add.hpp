#pragma once
#include <cstdint>

namespace troupe::cpu {

// Qwen3.5's shared expert joining the routed experts' sum: out[t, i] += sigmoid(gate[t]) *
// expert[t, i] for `tokens` rows of `width`; gate is the shared_expert_gate projection.
void shared_expert_add(float* out, const float* expert, const float* gate, int tokens, int64_t width);

}  // namespace troupe::cpu
