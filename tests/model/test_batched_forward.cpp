// Continuous batching must not change results: a sequence run alone and the same sequence
// inside mixed batches (prefill chunks beside decode tokens, shuffled KV blocks) give
// bit-identical logits.
#define BOOST_TEST_MODULE batched_forward
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <numeric>
#include <random>

#include "model/local_experts.hpp"
#include "model/single_sequence.hpp"
#include "tests/support/source_dir.hpp"

using namespace troupe;

namespace {

struct running {
  std::vector<int> tokens;  // prompt, then generated
  int done = 0;             // tokens already in the KV cache
  std::vector<int> blocks;
};

int argmax(const float* row, int n) { return int(std::max_element(row, row + n) - row); }

}  // namespace

BOOST_AUTO_TEST_CASE(batched_steps_match_sequences_run_alone) {
  auto model = qwen3_moe::load(test::source_dir() / "tests/golden/fixtures/gqa_sharded");
  BOOST_REQUIRE(model);
  const int vocab = model->config().vocab_size, block_size = 4, steps = 12;
  std::mt19937 gen(7);
  std::vector<running> seqs(6);
  for (size_t i = 0; i < seqs.size(); ++i) {
    seqs[i].tokens.resize(1 + i * 5);
    for (int& t : seqs[i].tokens) t = int(gen() % uint32_t(vocab - 2));
  }

  // Alone: prefill, then greedy decode, keeping every step's logits.
  std::vector<std::vector<std::vector<float>>> alone(seqs.size());
  for (size_t i = 0; i < seqs.size(); ++i) {
    single_sequence s(*model, 64, block_size);
    auto logits = s.forward(seqs[i].tokens);
    for (int step = 0; step < steps; ++step) {
      alone[i].push_back(logits);
      logits = s.forward(std::vector<int>{argmax(logits.data(), vocab)});
    }
  }

  // Together: blocks handed out in a shuffled order from one pool; sequence i joins at
  // step i (so prefill chunks share batches with decode tokens) and its prompt is split in
  // chunks of at most 7 tokens.
  std::vector<int> free_blocks(128);
  std::iota(free_blocks.begin(), free_blocks.end(), 0);
  std::shuffle(free_blocks.begin(), free_blocks.end(), gen);
  kv_pool kv(model->config(), 0, model->config().num_layers, 128, block_size);
  local_experts experts(model->weights(), 0, model->config().num_experts);
  std::vector<std::vector<std::vector<float>>> together(seqs.size());
  for (int step = 0; together.back().size() < size_t(steps); ++step) {
    forward_batch batch;
    std::vector<size_t> members;
    for (size_t i = 0; i < seqs.size() && int(i) <= step; ++i) {
      running& r = seqs[i];
      if (together[i].size() == size_t(steps)) continue;
      const int n = std::min<int>(7, int(r.tokens.size()) - r.done);
      while (int(r.blocks.size()) * block_size < r.done + n) {
        r.blocks.push_back(free_blocks.back());
        free_blocks.pop_back();
      }
      batch.sequences.push_back({int(batch.token_ids.size()), n, r.done, r.blocks, logits_rows::last});
      batch.token_ids.insert(batch.token_ids.end(), r.tokens.begin() + r.done, r.tokens.begin() + r.done + n);
      members.push_back(i);
    }
    auto hidden = model->embed(batch);
    BOOST_REQUIRE(model->run_layers(0, model->config().num_layers, batch, kv, experts, hidden).ok());
    auto logits = model->logits(batch, hidden);
    for (size_t m = 0; m < members.size(); ++m) {
      running& r = seqs[members[m]];
      r.done += batch.sequences[m].tokens;
      if (r.done < int(r.tokens.size())) continue;  // a prefill chunk: no token yet
      const float* row = logits.data() + m * size_t(vocab);
      together[members[m]].emplace_back(row, row + vocab);
      r.tokens.push_back(argmax(row, vocab));
    }
  }
  for (size_t i = 0; i < seqs.size(); ++i)
    for (int step = 0; step < steps; ++step)
      BOOST_TEST_CONTEXT("sequence " << i << " step " << step)
      BOOST_TEST((alone[i][size_t(step)] == together[i][size_t(step)]));
}
