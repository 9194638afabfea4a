#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace troupe::cuda {

// The per-token, per-value-head gates of Gated DeltaNet from their projections, as
// linear_attention_block computes them on the CPU: beta = sigmoid(b) and the log decay
// g = neg_decay_rate * softplus(a + dt_bias) (neg_decay_rate = -exp(A_log); softplus
// linear above 20, as torch's). a, b: bf16 token rows a_stride and b_stride elements apart
// (they may sit in a fused projection's row), value_heads each; neg_decay_rate, dt_bias:
// fp32 [value_heads]; g, beta: fp32 [tokens, value_heads], what gated_delta_rule reads.
// Device pointers.
void delta_rule_gates(const __nv_bfloat16* a, int a_stride, const __nv_bfloat16* b, int b_stride,
                      const float* neg_decay_rate, const float* dt_bias, int tokens, int value_heads, float* g,
                      float* beta, cudaStream_t stream);

}  // namespace troupe::cuda
