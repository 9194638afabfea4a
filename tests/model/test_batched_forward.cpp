// Continuous batching must not change results: a sequence run alone and the same sequence
// inside mixed batches (prefill chunks beside decode tokens, shuffled KV blocks, recurrent
// states in slots of one pool) give bit-identical logits.
#define BOOST_TEST_MODULE batched_forward
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <numeric>
#include <random>

#include "model/local_experts.hpp"
#include "model/qwen3_moe_weights.hpp"
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

constexpr int chunk = 7;  // prompts are prefilled in chunks of at most this many tokens

// `alone_chunk`: how the sequences run alone feed their prompts (0: whole). The gated delta
// rule's rounding depends on where a prompt is cut, so a hybrid model is cut alike.
void check_batched_matches_alone(const moe_model& model, int alone_chunk) {
  const int vocab = model.config().vocab_size, block_size = 4, steps = 12;
  std::mt19937 gen(7);
  std::vector<running> seqs(6);
  for (size_t i = 0; i < seqs.size(); ++i) {
    seqs[i].tokens.resize(1 + i * 5);
    for (int& t : seqs[i].tokens) t = int(gen() % uint32_t(vocab - 2));
  }

  // Alone: prefill, then greedy decode, keeping every step's logits.
  std::vector<std::vector<std::vector<float>>> alone(seqs.size());
  for (size_t i = 0; i < seqs.size(); ++i) {
    single_sequence s(model, 64, block_size);
    std::vector<float> logits;
    const std::span<const int> prompt(seqs[i].tokens);
    const size_t piece = alone_chunk > 0 ? size_t(alone_chunk) : prompt.size();
    for (size_t at = 0; at < prompt.size(); at += piece)
      logits = s.forward(prompt.subspan(at, std::min(piece, prompt.size() - at)));
    for (int step = 0; step < steps; ++step) {
      alone[i].push_back(logits);
      logits = s.forward(std::vector<int>{argmax(logits.data(), vocab)});
    }
  }

  // Together: blocks handed out in a shuffled order from one pool; sequence i joins at
  // step i (so prefill chunks share batches with decode tokens) and its prompt is split in
  // chunks of at most `chunk` tokens; sequence i's recurrent state is in slot i.
  std::vector<int> free_blocks(128);
  std::iota(free_blocks.begin(), free_blocks.end(), 0);
  std::shuffle(free_blocks.begin(), free_blocks.end(), gen);
  kv_pool kv(model.config(), 0, model.config().num_layers, 128, block_size, int(seqs.size()));
  local_experts experts(model.weights(), 0, model.config().num_experts);
  std::vector<std::vector<std::vector<float>>> together(seqs.size());
  for (int step = 0; together.back().size() < size_t(steps); ++step) {
    forward_batch batch;
    std::vector<size_t> members;
    for (size_t i = 0; i < seqs.size() && int(i) <= step; ++i) {
      running& r = seqs[i];
      if (together[i].size() == size_t(steps)) continue;
      const int n = std::min<int>(chunk, int(r.tokens.size()) - r.done);
      while (int(r.blocks.size()) * block_size < r.done + n) {
        r.blocks.push_back(free_blocks.back());
        free_blocks.pop_back();
      }
      batch.sequences.push_back({int(batch.token_ids.size()), n, r.done, r.blocks, logits_rows::last, int(i)});
      batch.token_ids.insert(batch.token_ids.end(), r.tokens.begin() + r.done, r.tokens.begin() + r.done + n);
      members.push_back(i);
    }
    auto hidden = model.embed(batch);
    BOOST_REQUIRE(model.run_layers(0, model.config().num_layers, batch, kv, experts, hidden).ok());
    auto logits = model.logits(batch, hidden);
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
    for (int step = 0; step < steps; ++step) BOOST_TEST_CONTEXT("sequence " << i << " step " << step)
  BOOST_TEST((alone[i][size_t(step)] == together[i][size_t(step)]));
}

}  // namespace

BOOST_AUTO_TEST_CASE(batched_steps_match_sequences_run_alone) {
  auto model = load_model(test::source_dir() / "tests/golden/fixtures/gqa_sharded");
  BOOST_REQUIRE(model);
  check_batched_matches_alone(**model, 0);
}

// A small qwen3_5_moe (random weights): linear-attention layers around a full-attention one.
BOOST_AUTO_TEST_CASE(batched_steps_of_a_hybrid_model_match_sequences_run_alone) {
  auto config = parse_model_config(R"({
    "model_type": "qwen3_5_moe_text", "vocab_size": 200, "hidden_size": 32, "num_hidden_layers": 3,
    "layer_types": ["linear_attention", "full_attention", "linear_attention"],
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "max_position_embeddings": 512,
    "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8,
    "linear_value_head_dim": 12, "linear_conv_kernel_dim": 4, "num_experts": 6, "num_experts_per_tok": 2,
    "moe_intermediate_size": 16, "shared_expert_intermediate_size": 24,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5}})",
                                   "config.json");
  BOOST_REQUIRE_MESSAGE(config, (config ? "" : config.err().message));
  const auto model = make_model(*config, make_dummy_weights(*config, 3));
  check_batched_matches_alone(*model, chunk);
}
