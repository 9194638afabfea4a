#pragma once

namespace troupe::cpu {

struct delta_rule_shape {
  int tokens = 0;
  int key_heads = 0;  // value head h reads key head h / (value_heads / key_heads)
  int value_heads = 0;
  int key_dim = 0;
  int value_dim = 0;
};

// The gated delta rule of Gated DeltaNet over `tokens` tokens of one sequence. Per value
// head, with its state S [key_dim, value_dim]:
//   S = exp(g_t) S;   S += k_t (beta_t (v_t - S^T k_t))^T;   o_t = S^T q_t
// q and k are L2-normalised (eps 1e-6) and q is scaled by 1/sqrt(key_dim) first, as
// transformers' use_qk_l2norm_in_kernel does. q, k: [tokens, key_heads, key_dim];
// v: [tokens, value_heads, value_dim]; g (log decay, <= 0) and beta: [tokens, value_heads];
// state: [value_heads, key_dim, value_dim], read and left after the last token (zeros
// before a sequence's first); out: [tokens, value_heads, value_dim].
//
// Token by token: the decode form.
void gated_delta_rule_recurrent(const float* q, const float* k, const float* v, const float* g, const float* beta,
                                const delta_rule_shape& shape, float* state, float* out);

// The same function in chunks of `chunk` tokens (the prefill form): within a chunk every
// token's correction to the state is found by one triangular solve, and the state is
// written once per chunk.
void gated_delta_rule_chunked(const float* q, const float* k, const float* v, const float* g, const float* beta,
                              const delta_rule_shape& shape, int chunk, float* state, float* out);

}  // namespace troupe::cpu
