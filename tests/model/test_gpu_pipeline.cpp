// The CUDA step split into pipeline stages on one GPU: runners of layer ranges chained in
// one process, each handing its fp32 residual rows to the next, against one runner of
// every layer on the golden fixtures the parity test uses. The stream is fp32 on the
// device and a stage hands it on after the same fp32 add the next layer's norm would do,
// so the tokens and top-5 log-probs must be the same to the bit: over a prefill, eager
// and graph decode steps, and a batch whose decode graph has padding rows.
#define BOOST_TEST_MODULE gpu_pipeline
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "model/cuda/gpu_step_runner.hpp"
#include "tests/model/gpu_fixtures.hpp"

using namespace troupe;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr int block_size = 16;
constexpr int decode_steps = 12;

// The runners of a model split into stages, in pipeline order.
struct pipeline {
  std::vector<std::unique_ptr<step_runner>> stages;
  size_t hidden_size = 0;
};

// `stages` ranges as even as the layers allow, the first ones a layer longer.
pipeline make_pipeline(const test::engine_parts& e, int stages, bool graphs) {
  const int layers = e.weights->config.num_layers;
  pipeline p{{}, size_t(e.weights->config.hidden_size)};
  for (int k = 0, first = 0; k < stages; ++k) {
    const int last = first + layers / stages + (k < layers % stages ? 1 : 0);
    gpu_runner_options o{64, block_size, 512, 8, 256, graphs};
    o.first_layer = first;
    o.last_layer = last;
    auto r = gpu_step_runner::create(e.weights, e.experts, o);
    BOOST_REQUIRE_MESSAGE(r, (r ? std::string() : r.err().message));
    p.stages.push_back(std::move(*r));
    first = last;
  }
  return p;
}

// One step through the pipeline: the first stage embeds, each hands its rows to the next,
// the last samples.
std::vector<sampled_token> run_step(pipeline& p, const forward_batch& batch, const std::vector<sample_request>& samples) {
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
transcript decode(pipeline& p, const std::vector<std::vector<int>>& prompts) {
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
void check_identical(const transcript& got, const transcript& want, const std::string& what) {
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

// Decodes `prompts` with one runner and with 2 and 3 stages (as many as the layers allow),
// decode steps as graphs or eagerly.
void compare_splits(const fs::path& dir, const std::vector<std::vector<int>>& prompts, bool graphs) {
  const test::engine_parts parts = test::load_engine(dir);
  const std::string name = dir.filename().string() + (graphs ? " (graphs)" : " (eager)");
  pipeline whole = make_pipeline(parts, 1, graphs);
  const transcript want = decode(whole, prompts);
  for (int stages = 2; stages <= std::min(3, parts.weights->config.num_layers); ++stages) {
    pipeline split = make_pipeline(parts, stages, graphs);
    check_identical(decode(split, prompts), want, name + " in " + std::to_string(stages) + " stages");
  }
}

std::vector<int> prompt_of(const fs::path& dir) { return test::read_golden(dir)["prompt"].get<std::vector<int>>(); }

}  // namespace

BOOST_AUTO_TEST_CASE(gpu_shaped_fixtures_exist) { BOOST_TEST(test::gpu_fixtures().size() >= 4); }

BOOST_AUTO_TEST_CASE(stages_decode_one_sequence_like_one_runner) {
  for (const auto& dir : test::gpu_fixtures())
    for (bool graphs : {true, false}) compare_splits(dir, {prompt_of(dir)}, graphs);
}

// Three sequences of different lengths: their decode graph (batch bucket 4) has a padding
// row, which a later stage fills with zeros rather than the first stage's embedding.
BOOST_AUTO_TEST_CASE(stages_decode_a_padded_batch_like_one_runner) {
  for (const auto& dir : test::gpu_fixtures()) {
    const auto prompt = prompt_of(dir);
    std::vector<std::vector<int>> prompts;
    for (size_t cut : {size_t(0), size_t(3), size_t(7)})
      prompts.emplace_back(prompt.begin(), prompt.end() - long(std::min(cut, prompt.size() - 1)));
    compare_splits(dir, prompts, true);
  }
}

BOOST_AUTO_TEST_CASE(a_layer_range_outside_the_model_is_refused) {
  const test::engine_parts parts = test::load_engine(test::gpu_fixtures().front());
  const int layers = parts.weights->config.num_layers;
  for (const auto& [first, last] : std::vector<std::pair<int, int>>{{1, 1}, {0, layers + 1}, {-1, 1}}) {
    gpu_runner_options o{64, block_size, 512, 8, 256};
    o.first_layer = first;
    o.last_layer = last;
    auto r = gpu_step_runner::create(parts.weights, parts.experts, o);
    BOOST_REQUIRE(!r);
    BOOST_TEST(r.err().message.find("a GPU stage of layers [" + std::to_string(first) + ", " + std::to_string(last) +
                                    ")") != std::string::npos,
               r.err().message);
  }
}
