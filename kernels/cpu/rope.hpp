#pragma once

namespace troupe::cpu {

// Rotary position embedding, rotate-half form as in transformers: for each of `tokens`
// rows of `heads` x `head_dim`, pairs (i, i + d/2) rotate by position * theta^(-2i/d), where
// d is rotary_dim: the leading dims that rotate (partial rotary; 0: all), the rest pass.
void rope(float* x, int tokens, int heads, int head_dim, const int* positions, float theta, int rotary_dim = 0);

}  // namespace troupe::cpu
