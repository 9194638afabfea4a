#pragma once
#include "kernels/cuda/gated_delta_rule.cuh"

namespace troupe::cuda {

// gated_delta_rule for prompts, in chunks of a sequence's tokens from its first in the
// step (64 of them, 32 where key_dim exceeds 128), as cpu::gated_delta_rule_chunked: within
// a chunk, the tokens' corrections u = (I + A)^-1 beta (v - e^G K S0) come by forward
// substitution over the chunk's strictly lower A (A[t][i] = beta_t e^(G_t - G_i) k_t . k_i,
// G the cumulative log decay), the outputs are e^G Q S0 + (e^(G_t - G_i) q_t . k_i)_(i<=t) u,
// and the state after it e^G_last S0 + K^T e^(G_last - G) u. So the scan takes one
// dependent step a chunk instead of a token: the recurrent kernel, latency-bound at one
// token a step, took most of a long prompt's time. Its rounding differs from the
// recurrent kernel's (and so from a prompt's decode token by token) within fp32. The
// same arguments and limits as gated_delta_rule; only the sequences of at least
// delta_rule_chunked_from tokens, the others' rows and slots left to gated_delta_rule(...,
// delta_rule_chunked_from). A block, a chunk at a time, holds its head's 32 columns of
// the state: one of several short sequences is better served token by token. The
// chunks' state-free dot products (k_t . k_i, q_t . k_i) are made first, once a key head,
// into `workspace` (gated_delta_rule_chunked_workspace_floats of the step's tokens).
// The prompt length from which a sequence takes this kernel: a chunk.
inline constexpr int delta_rule_chunked_from = 64;

void gated_delta_rule_chunked(const delta_rule_inputs& in, const delta_rule_heads& heads, const state_sequences& seqs,
                              float* states, float* workspace, __nv_bfloat16* out, cudaStream_t stream);
size_t gated_delta_rule_chunked_workspace_floats(int tokens, const delta_rule_heads& heads);

}  // namespace troupe::cuda
