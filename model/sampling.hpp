#pragma once
// What a request asks of sampling, and what sampling returns: carried in step plans and
// results, so serializable (TROUPE_FIELDS).
#include <cstdint>
#include <vector>

#include "base/fields.hpp"

namespace troupe {

// OpenAI's logit_bias entry: added to the token's logit before sampling (-100 bans it in
// practice, +100 all but forces it).
struct token_bias {
  int token = 0;
  float bias = 0.0f;
  TROUPE_FIELDS(token_bias, token, bias)
};

// How to pick the next token. Every request carries a seed (the client's, or one the
// gateway drew), so a sequence re-run after a failure samples exactly the same tokens.
struct sampling_params {
  float temperature = 1.0f;  // 0: greedy
  float top_p = 1.0f;
  int top_k = 0;  // 0: off
  float min_p = 0.0f;
  float presence_penalty = 0.0f;    // OpenAI: on generated tokens
  float frequency_penalty = 0.0f;   // OpenAI: on generated tokens
  float repetition_penalty = 1.0f;  // vLLM: on prompt and generated tokens
  uint64_t seed = 0;
  int top_logprobs = -1;               // -1: no log-probs; 0..20: the chosen token's and this many more
  std::vector<token_bias> logit_bias;  // ids below the vocabulary's size (the gateway checks)
  TROUPE_FIELDS(sampling_params, temperature, top_p, top_k, min_p, presence_penalty, frequency_penalty,
                repetition_penalty, seed, top_logprobs, logit_bias)
};

// The sampler's random draw for sequence position `position`: splitmix64 of (seed,
// position), in [0, 1). The host draws it for the CPU and the GPU sampler alike.
inline double sampling_uniform(uint64_t seed, int position) {
  uint64_t x = seed ^ (uint64_t(uint32_t(position)) * 0x9e3779b97f4a7c15ull);
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return double(x >> 11) / double(1ull << 53);
}

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
