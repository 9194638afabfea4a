#pragma once
#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace troupe::cuda {

// Each row's sampling_params and token_history, as device arrays of [rows] each. Row r's
// history is history_tokens[history_offsets[r] .. history_offsets[r + 1]), each token at
// most once and below vocab, with its count in prompt and output (history_seen), in output
// only (history_generated) and its logit_bias (history_bias, 0 for none): the tokens that
// a row's penalties or logit_bias touch, none for a row with neither.
struct sampling_rows {
  const float* temperature;
  const float* top_p;
  const int* top_k;
  const float* min_p;
  const float* repetition_penalty;
  const float* frequency_penalty;
  const float* presence_penalty;
  const double* uniform;  // sampling_uniform(seed, position), drawn on the host
  const int* top_logprobs;
  const int* history_offsets;  // [rows + 1]
  const int* history_tokens;
  const int* history_seen;
  const int* history_generated;
  const float* history_bias;
  // Constrained decoding: row r may only take the tokens whose bits are set in mask
  // allowed[mask_rows[r] * mask_words ..] (bit id % 64 of word id / 64); mask_rows[r] = -1
  // for no constraint.
  const int* mask_rows;
  const uint64_t* allowed;
  int mask_words;
};

// Runners-up slots per row in top_ids and top_logprobs.
inline constexpr int sampling_max_top_logprobs = 20;

// Bytes of scratch sample_tokens needs (penalised copies of the rows): the caller owns it
// so that the decode step allocates nothing.
size_t sampling_workspace_bytes(int rows, int vocab);

// One token per row of fp32 logits [rows, vocab], by the rule of sample_with_uniform
// (model/sampler.hpp) with the tokens a row's mask leaves out scored -inf before the
// logit bias and penalties, in two launches (a sweep of each row in slices, then a block per row), without
// a host sync:
//   tokens[r]: the token;
//   for rows with top_logprobs[r] = n >= 0: logprob[r], the chosen token's log_softmax of
//   the raw logits, and top_ids / top_logprobs [rows, 20]: the n best by log-prob (ties to
//   the lower id), then id -1 and log-prob 0. Other rows leave these untouched.
// Probabilities are fp32 and their sums fp64, so the token is the CPU's unless the CPU's
// cumulative mass at the chosen boundary lies within about 1e-6 (relative to the kept
// mass) of the target. vocab <= 262144. Device pointers; workspace of
// sampling_workspace_bytes(rows, vocab).
void sample_tokens(const float* logits, int rows, int vocab, const sampling_rows& params, void* workspace, int* tokens,
                   float* logprob, int* top_ids, float* top_logprobs, cudaStream_t stream);

}  // namespace troupe::cuda
