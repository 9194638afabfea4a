#include "model/cpu_step_runner.hpp"

#include "base/check.hpp"

namespace troupe {

result<stage_output> cpu_step_runner::run(const forward_batch& batch, std::vector<float> hidden,
                                          const std::vector<sample_request>& samples) {
  const model_config& c = model_->config();
  if (first_ == 0) {
    TROUPE_CHECK(hidden.empty(), "the first stage was given hidden rows");
    hidden = model_->embed(batch);
  }
  TROUPE_CHECK(hidden.size() == batch.token_ids.size() * size_t(c.hidden_size),
               "hidden rows that do not match the step's tokens");
  if (auto r = model_->run_layers(first_, last_, batch, kv_, *experts_, hidden); !r) return r.err();
  if (last_ < c.num_layers) return stage_output{{}, std::move(hidden)};
  const int vocab = c.vocab_size;
  const auto logits = model_->logits(batch, hidden);
  stage_output out;
  for (size_t i = 0; i < samples.size(); ++i)
    out.tokens.push_back(sample(logits.data() + i * size_t(vocab), vocab, samples[i].params, *samples[i].history,
                                samples[i].position, samples[i].allowed));
  return out;
}

}  // namespace troupe
