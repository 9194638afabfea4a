#include "model/cuda/gpu_single_sequence.hpp"

#include "model/cuda/gpu_step_runner.hpp"

namespace troupe {

result<std::unique_ptr<gpu_single_sequence>> gpu_single_sequence::load(const std::filesystem::path& dir, bool dummy,
                                                                       int capacity) {
  constexpr int block_size = 16;
  auto weights = load_gpu_weights(dir, dummy);
  if (!weights) return weights.err();
  std::unique_ptr<gpu_single_sequence> s(new gpu_single_sequence);
  s->weights_ = std::move(*weights);
  s->experts_ = std::make_shared<gpu_experts>(s->weights_);
  s->experts_->attach("experts", 0, s->weights_->config.num_experts);
  const int blocks = (capacity + block_size - 1) / block_size;
  for (int b = 0; b < blocks; ++b) s->block_table_.push_back(b);
  // A prompt is one step, so the step holds the whole capacity.
  auto runner =
      gpu_step_runner::create(s->weights_, s->experts_, {blocks, block_size, blocks * block_size, 1, capacity});
  if (!runner) return runner.err();
  s->runner_ = std::move(*runner);
  return s;
}

result<int> gpu_single_sequence::forward(std::span<const int> tokens) {
  forward_batch batch{{tokens.begin(), tokens.end()},
                      {{0, int(tokens.size()), length_, block_table_, logits_rows::last, 0}}};
  length_ += int(tokens.size());
  sampling_params greedy;
  greedy.temperature = 0.0f;
  auto out = runner_->run(batch, {}, {{greedy, &history_, length_}});
  if (!out) return out.err();
  return out->tokens.front().token;
}

}  // namespace troupe
