#pragma once
// Picks the next token from one row of logits, on the CPU.
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "model/sampling.hpp"

namespace troupe {

// The tokens a sequence has seen, for the penalties: the last stage keeps one per
// sequence and rebuilds it from the tokens of a re-prefill.
class token_history {
 public:
  void add(int token, bool generated) {
    ++seen_[token];
    if (generated) ++generated_[token];
  }
  const std::unordered_map<int, int>& seen() const { return seen_; }            // prompt and output
  const std::unordered_map<int, int>& generated() const { return generated_; }  // output only

 private:
  std::unordered_map<int, int> seen_, generated_;
};

// Samples the token for sequence position `position`. The random draw depends only on
// (params.seed, position), never on what else ran, so a batch, a replay after a failure
// and a run alone agree. Log-probs (of the raw model distribution, whatever the mask and
// the penalties did) are filled in only when params.top_logprobs >= 0.
//
// `allowed` (constrained decoding; null: every token) holds bit id % 64 of word id / 64
// for each token that may be chosen; words past its end allow nothing. It must allow at
// least one token below `vocab`.
sampled_token sample(const float* logits, int vocab, const sampling_params& params, const token_history& history,
                     int position, const std::vector<uint64_t>* allowed = nullptr);

// The same with the draw given: u = sampling_uniform(params.seed, position), in [0, 1).
// The rule, which cuda::sample_tokens follows too:
//  - tokens outside `allowed` take no part: what follows runs over the allowed tokens
//    alone, as if the others scored -inf (probabilities renormalised over the allowed
//    ones), except that no rounding at the end of the walk can land on one of them;
//  - penalties, then greedy (temperature 0: the highest score, ties to the lower id) or
//    probs = softmax(scores / temperature), in double;
//  - tokens rank by probability, ties to the lower id. top_k keeps the k first, top_p the
//    shortest prefix whose mass reaches top_p, min_p the tokens at or above min_p times
//    the top probability: each keeps the tokens ranked at or above a cut;
//  - target = u * (kept mass); walking the kept tokens in ascending id, the first whose
//    cumulative mass exceeds target is chosen. The id order (not the rank order) lets a
//    GPU find the token with a prefix sum instead of a sort.
sampled_token sample_with_uniform(const float* logits, int vocab, const sampling_params& params,
                                  const token_history& history, double u,
                                  const std::vector<uint64_t>* allowed = nullptr);

}  // namespace troupe
