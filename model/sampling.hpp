#pragma once
// What a request asks of sampling, and what sampling returns: carried in step plans and
// results, so serializable (TROUPE_FIELDS).
#include <cstdint>
#include <vector>

#include "base/fields.hpp"

namespace troupe {

// How to pick the next token. Every request carries a seed (the client's, or one the
// gateway drew), so a sequence re-run after a failure samples exactly the same tokens.
struct sampling_params {
  float temperature = 1.0f;         // 0: greedy
  float top_p = 1.0f;
  int top_k = 0;                    // 0: off
  float min_p = 0.0f;
  float presence_penalty = 0.0f;    // OpenAI: on generated tokens
  float frequency_penalty = 0.0f;   // OpenAI: on generated tokens
  float repetition_penalty = 1.0f;  // vLLM: on prompt and generated tokens
  uint64_t seed = 0;
  int top_logprobs = -1;            // -1: no log-probs; 0..20: the chosen token's and this many more
  TROUPE_FIELDS(sampling_params, temperature, top_p, top_k, min_p, presence_penalty,
                frequency_penalty, repetition_penalty, seed, top_logprobs)
};

struct top_logprob {
  int token = 0;
  float logprob = 0.0f;
  TROUPE_FIELDS(top_logprob, token, logprob)
};

// One sampled token with its log-prob under the model, and the runners-up if asked.
struct sampled_token {
  int token = 0;
  float logprob = 0.0f;
  std::vector<top_logprob> top;
  TROUPE_FIELDS(sampled_token, token, logprob, top)
};

}  // namespace troupe
