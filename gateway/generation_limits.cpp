#include "gateway/generation_limits.hpp"

#include <string>

namespace troupe {

std::vector<int> stop_ids(const generation_options& options, std::span<const int> eos_token_ids) {
  std::vector<int> stops = options.stop_token_ids;
  const bool constrained = !options.output_grammar.rules.empty();
  if (!options.ignore_eos || constrained) stops.insert(stops.end(), eos_token_ids.begin(), eos_token_ids.end());
  return stops;
}

namespace {

api_error outside_vocabulary(const char* param, int id, int vocab_size) {
  return bad_param(param, "token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                              std::to_string(vocab_size - 1) + ")");
}

// The field to shorten: the prompt when it alone is too long, else max_tokens.
api_error context_too_long(api_kind kind, int prompt_len, int max_tokens, int max_model_len) {
  const char* prompt_param = kind == api_kind::chat ? "messages" : "prompt";
  api_error e =
      bad_param(prompt_len < max_model_len ? "max_tokens" : prompt_param,
                "This model's maximum context length is " + std::to_string(max_model_len) +
                    " tokens. However, you requested " + std::to_string(prompt_len + max_tokens) + " tokens (" +
                    std::to_string(prompt_len) + " in the " + prompt_param + ", " + std::to_string(max_tokens) +
                    " in the completion). Please reduce the length of the " + prompt_param + " or the completion.");
  e.code = "context_length_exceeded";
  return e;
}

}  // namespace

std::optional<api_error> check_generation(const generation_limits& limits, size_t pending, api_kind kind,
                                          const generation_options& options,
                                          const std::vector<generation_call::choice_prompt>& prompts) {
  // Pending work is counted in sequences (prompts x n), which is what the engine runs.
  const size_t sequences = prompts.size() * size_t(options.n);
  if (sequences > limits.max_pending)
    return bad_param(prompts.size() > 1 ? "prompt" : "n", "the request asks for " + std::to_string(sequences) +
                                                              " sequences (prompts x n); this server "
                                                              "takes at most " +
                                                              std::to_string(limits.max_pending) + " at once");
  if (pending + sequences > limits.max_pending) return too_many_requests();
  for (const auto& [id, bias] : options.sampling.logit_bias)
    if (id >= limits.vocab_size) return outside_vocabulary("logit_bias", id, limits.vocab_size);
  for (const auto& p : prompts) {
    for (int id : p.ids)
      if (id < 0 || id >= limits.vocab_size) return outside_vocabulary("prompt", id, limits.vocab_size);
    const int len = int(p.ids.size());
    if (len == 0) return bad_param("prompt", "the prompt is empty");
    if (len + options.max_tokens > limits.max_model_len)
      return context_too_long(kind, len, options.max_tokens, limits.max_model_len);
  }
  const bool constrained = !options.output_grammar.rules.empty();
  if (constrained && stop_ids(options, limits.eos_token_ids).empty())
    return bad_param("response_format", "this model has no end-of-sequence token to end a constrained output");
  return std::nullopt;
}

}  // namespace troupe
