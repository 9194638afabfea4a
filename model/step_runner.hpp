#pragma once
// What a stage computes for one step, on the CPU or on a GPU: its layers over the batch
// and, on the stage holding the last layer, the sampled next tokens. A failed step (an
// expert group it needs is restarting) is an error, not a crash: the scheduler re-runs it.
// Pipeline stages hand the residual stream on: the first embeds the batch's tokens, the
// others start from the previous stage's hidden rows.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/result.hpp"
#include "model/forward_batch.hpp"
#include "model/sampler.hpp"

namespace troupe {

// One sequence of the batch that samples: its parameters, what the penalties count, the
// position its next token takes (the draw depends on it), and, under constrained
// decoding, the tokens it may take (bit id % 64 of word id / 64; null: any token).
struct sample_request {
  sampling_params params;
  const token_history* history = nullptr;
  int position = 0;
  const std::vector<uint64_t>* allowed = nullptr;
};

// A stage's part of a step: the last stage's sampled tokens, or any other stage's residual
// stream after its layers, [tokens, hidden] fp32, for the next stage.
struct stage_output {
  std::vector<sampled_token> tokens;
  std::vector<float> hidden;
};

class step_runner {
 public:
  virtual ~step_runner() = default;
  // `hidden` is empty at the first stage (it embeds batch.token_ids), else the previous
  // stage's output. `samples` (last stage) has one entry per sequence whose `logits` is
  // `last`, in batch order; the result one token for each.
  virtual result<stage_output> run(const forward_batch& batch, std::vector<float> hidden,
                                   const std::vector<sample_request>& samples) = 0;
};

// Builds the runner of layers [first, last), with an empty KV pool: called at every stage
// (re)start. Weights live outside runners, so a restarted stage re-attaches to them.
using step_runner_factory = std::function<result<std::unique_ptr<step_runner>>(int first_layer, int last_layer)>;

}  // namespace troupe
