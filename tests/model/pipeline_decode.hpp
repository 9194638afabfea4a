#pragma once
// Greedy decoding through a chain of GPU step runners (pipeline stages, each handing its
// fp32 residual rows to the next), and a bitwise comparison of two such decodings.
#include <memory>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "model/step_runner.hpp"

namespace troupe::test {

inline constexpr int block_size = 16;
inline constexpr int decode_steps = 12;

// The runners of a model split into stages, in pipeline order.
struct pipeline {
  std::vector<std::unique_ptr<step_runner>> stages;
  size_t hidden_size = 0;
};

// One step through the pipeline: the first stage embeds, each hands its rows to the next,
// the last samples.
inline std::vector<sampled_token> run_step(pipeline& p, const forward_batch& batch,
                                           const std::vector<sample_request>& samples) {
  std::vector<float> hidden;
  for (size_t k = 0; k < p.stages.size(); ++k) {
    const bool last = k + 1 == p.stages.size();
    auto out = p.stages[k]->run(batch, std::move(hidden), last ? samples : std::vector<sample_request>{});
    BOOST_REQUIRE_MESSAGE(out, (out ? std::string() : out.err().message));
    if (last) {
      BOOST_REQUIRE(out->hidden.empty());
      return std::move(out->tokens);
    }
    BOOST_REQUIRE(out->tokens.empty());
    BOOST_REQUIRE_EQUAL(out->hidden.size(), batch.token_ids.size() * p.hidden_size);
    hidden = std::move(out->hidden);
  }
  return {};
}

// Every step's sampled tokens, [step][sequence].
using transcript = std::vector<std::vector<sampled_token>>;

// Greedy decoding of `prompts` side by side: one prefill of them all, then decode_steps
// steps of one token a sequence, each asking for the top-5 log-probs. Sequence s has
// recurrent-state slot s (qwen3_5_moe; the others ignore it).
inline transcript decode(pipeline& p, const std::vector<std::vector<int>>& prompts) {
  const size_t n = prompts.size();
  constexpr int blocks_each = 8;  // 128 positions a sequence, 8 sequences in the 64-block pool
  std::vector<std::vector<int>> tables(n);
  std::vector<token_history> histories(n);
  std::vector<sample_request> samples;
  sampling_params greedy;
  greedy.temperature = 0.0f;
  greedy.top_logprobs = 5;
  forward_batch prefill;
  for (size_t s = 0; s < n; ++s) {
    for (int b = 0; b < blocks_each; ++b) tables[s].push_back(int(s) * blocks_each + b);
    const int length = int(prompts[s].size());
    prefill.sequences.push_back({int(prefill.token_ids.size()), length, 0, tables[s], logits_rows::last, int(s)});
    prefill.token_ids.insert(prefill.token_ids.end(), prompts[s].begin(), prompts[s].end());
    samples.push_back({greedy, &histories[s], length});
  }
  transcript t{run_step(p, prefill, samples)};
  for (int step = 0; step < decode_steps; ++step) {
    forward_batch batch;
    for (size_t s = 0; s < n; ++s) {
      const int position = int(prompts[s].size()) + step;
      batch.token_ids.push_back(t.back()[s].token);
      batch.sequences.push_back({int(s), 1, position, tables[s], logits_rows::last, int(s)});
      samples[s].position = position + 1;
    }
    t.push_back(run_step(p, batch, samples));
  }
  return t;
}

// The same tokens, log-probs and top-5 (ids and log-probs), bit for bit.
inline void check_identical(const transcript& got, const transcript& want, const std::string& what) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  for (size_t step = 0; step < want.size(); ++step) {
    BOOST_REQUIRE_EQUAL(got[step].size(), want[step].size());
    for (size_t s = 0; s < want[step].size(); ++s) {
      const sampled_token &a = got[step][s], &b = want[step][s];
      BOOST_TEST_CONTEXT(what << " step " << step << " sequence " << s) {
        BOOST_TEST(a.token == b.token);
        BOOST_TEST(a.logprob == b.logprob);
        BOOST_REQUIRE_EQUAL(a.top.size(), 5u);
        BOOST_REQUIRE_EQUAL(b.top.size(), 5u);
        for (size_t j = 0; j < 5; ++j) {
          BOOST_TEST_CONTEXT("rank " << j) {
            BOOST_TEST(a.top[j].token == b.top[j].token);
            BOOST_TEST(a.top[j].logprob == b.top[j].logprob);
          }
        }
      }
    }
  }
}

}  // namespace troupe::test
