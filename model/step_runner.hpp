#pragma once
// What a stage computes for one step, on the CPU or on a GPU: its layers over the batch
// and, on the stage holding the last layer, the sampled next tokens. A failed step (an
// expert group it needs is restarting) is an error, not a crash: the scheduler re-runs it.
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

class step_runner {
 public:
  virtual ~step_runner() = default;
  // `samples` has one entry per sequence whose `logits` is `last`, in batch order; the
  // result one token for each.
  virtual result<std::vector<sampled_token>> run(const forward_batch& batch,
                                                 const std::vector<sample_request>& samples) = 0;
};

// Builds the runner of layers [first, last), with an empty KV pool: called at every stage
// (re)start. Weights live outside runners, so a restarted stage re-attaches to them.
using step_runner_factory =
    std::function<result<std::unique_ptr<step_runner>>(int first_layer, int last_layer)>;

}  // namespace troupe
