#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/state_sequences.cuh"

namespace troupe::cuda {

inline constexpr int delta_rule_max_key_dim = 256;

struct delta_rule_heads {
  int key_heads = 0;  // value head h reads key head h / (value_heads / key_heads)
  int value_heads = 0;
  int key_dim = 0;
  int value_dim = 0;
};

// A step's inputs. q, k: bf16 [tokens, key_heads, key_dim] and v: bf16 [tokens,
// value_heads, value_dim], token rows qkv_stride elements apart (all three may sit in the
// conv's output row). The gates come from a and b, bf16 [tokens, value_heads] with rows
// gate_stride apart (the in-projection's row), as linear_attention_block makes them: the
// log decay g = neg_decay_rate * softplus(a + dt_bias) (<= 0; neg_decay_rate and dt_bias
// fp32 [value_heads]) and beta = sigmoid(b).
struct delta_rule_inputs {
  const __nv_bfloat16* q;
  const __nv_bfloat16* k;
  const __nv_bfloat16* v;
  int qkv_stride;
  const __nv_bfloat16* a;
  const __nv_bfloat16* b;
  int gate_stride;
  const float* neg_decay_rate;
  const float* dt_bias;
};

// The gates, then cpu::gated_delta_rule_recurrent for every sequence of a step (q and k
// L2-normalised, q scaled by 1/sqrt(key_dim), then the state update and o_t = S^T q_t
// token by token), a prompt's tokens (prefill) or one token each (decode) alike. states: the layer's fp32
// pool [slots, value_heads, key_dim, value_dim], each read once and written once a step;
// out: bf16 [tokens, value_heads, value_dim]. Device pointers; key_dim at most 256,
// value_heads a multiple of key_heads. Only the sequences of fewer than `below` tokens:
// the others' rows and slots are left to gated_delta_rule_chunked.
void gated_delta_rule(const delta_rule_inputs& in, const delta_rule_heads& heads, const state_sequences& seqs,
                      float* states, __nv_bfloat16* out, cudaStream_t stream, int below = 1 << 30);

}  // namespace troupe::cuda
