#pragma once

namespace troupe::cpu {

// Rotary position embedding, rotate-half form as in transformers: for each of `tokens`
// rows of `heads` x `head_dim`, pairs (i, i + head_dim/2) rotate by position * theta^(-2i/d).
void rope(float* x, int tokens, int heads, int head_dim, const int* positions, float theta);

}  // namespace troupe::cpu
