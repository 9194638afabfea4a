#pragma once
// A Gated DeltaNet token's gates, as linear_attention_block makes them, inside the kernels
// that use them (each saves the launch a kernel of their own would take).
#include <cuda_bf16.h>

#include "kernels/cuda/gated_delta_rule.cuh"

namespace troupe::cuda {

// Head h's (a, b) of token row `row`: what its gates are made of, loaded ahead of use.
__device__ inline float2 delta_rule_gate_inputs(const delta_rule_inputs& in, int row, int h) {
  const size_t at = size_t(row) * in.gate_stride + h;
  return {__bfloat162float(in.a[at]), __bfloat162float(in.b[at])};
}

// Head h's (g, beta) of those: g = neg_decay_rate * softplus(a + dt_bias) (torch's threshold
// of 20), beta = sigmoid(b).
__device__ inline float2 delta_rule_gates(const delta_rule_inputs& in, float2 ab, int h) {
  const float a = ab.x + in.dt_bias[h];
  return {in.neg_decay_rate[h] * (a > 20.0f ? a : log1pf(expf(a))), 1.0f / (1.0f + expf(-ab.y))};
}

__device__ inline float2 delta_rule_gates_of(const delta_rule_inputs& in, int row, int h) {
  return delta_rule_gates(in, delta_rule_gate_inputs(in, row, h), h);
}

}  // namespace troupe::cuda
