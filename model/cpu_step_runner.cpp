#include "model/cpu_step_runner.hpp"

namespace troupe {

result<std::vector<sampled_token>> cpu_step_runner::run(const forward_batch& batch,
                                                        const std::vector<sample_request>& samples) {
  auto hidden = model_->embed(batch);
  if (auto r = model_->run_layers(first_, last_, batch, kv_, *experts_, hidden); !r) return r.err();
  const int vocab = model_->config().vocab_size;
  const auto logits = model_->logits(batch, hidden);
  std::vector<sampled_token> tokens;
  for (size_t i = 0; i < samples.size(); ++i)
    tokens.push_back(sample(logits.data() + i * size_t(vocab), vocab, samples[i].params, *samples[i].history,
                            samples[i].position, samples[i].allowed));
  return tokens;
}

}  // namespace troupe
