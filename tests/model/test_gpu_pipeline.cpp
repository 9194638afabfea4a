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
#include "tests/model/pipeline_decode.hpp"

using namespace troupe;
namespace fs = std::filesystem;
using json = nlohmann::json;
using test::block_size;
using test::check_identical;
using test::decode;
using test::pipeline;
using test::transcript;

namespace {

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
