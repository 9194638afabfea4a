#pragma once
// What a generation request must fit before any engine sees it: its sequences (prompts x
// n) within the server's pending limit, every token id within the vocabulary, every prompt
// plus max_tokens within the context length, and an end for a constrained output. The
// gateway checks it as it admits the request; a refusal is the API's answer (a 400 naming
// the field, or a 429).
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "gateway/api_error.hpp"
#include "gateway/generation_call.hpp"
#include "gateway/openai/generation_request_json.hpp"

namespace troupe {

// The figures of the model and the server a request is checked against.
struct generation_limits {
  int vocab_size = 0;      // ids the model accepts
  int max_model_len = 0;   // prompt plus max_tokens
  size_t max_pending = 0;  // sequences in flight before 429
  std::span<const int> eos_token_ids;
};

// The ids that end each sequence of the request: its stop_token_ids, and the model's eos
// unless ignore_eos. A constrained output ends where its grammar does: with eos, ignore_eos
// or not.
std::vector<int> stop_ids(const generation_options& options, std::span<const int> eos_token_ids);

// Why the request cannot run now, or nothing when it can; `pending`: the sequences already
// in flight. The first refusal in the order above.
std::optional<api_error> check_generation(const generation_limits& limits, size_t pending, api_kind kind,
                                          const generation_options& options,
                                          const std::vector<generation_call::choice_prompt>& prompts);

}  // namespace troupe
