// The CUDA step on a checkpoint's shape with random weights (--load-format dummy): batch-1
// decode next to the memory-bandwidth floor, decode at larger batches, and one long
// prefill. Timed on the host around step_runner::run, as the stage actor calls it: the
// figures include packing inputs, the graph launch and reading the tokens back.
//   bench_gpu_forward CONFIG_DIR [--context 512] [--steps 128] [--batches 1,32,128] [--prefill 4096]
//                     [--joining 512] [--admitted 16]
// --admitted N also times one step that prefills N prompts of --context tokens, as serving
// admits a wave of requests. ncu --profile-from-start off profiles one more step of each
// measure (pick them with the flags: --batches 1 --joining 0 --admitted 0 is one decode step).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <cuda_profiler_api.h>

#include "bench/copy_bandwidth.hpp"
#include "kernels/cuda/check.cuh"
#include "model/cuda/gpu_step_runner.hpp"

using namespace troupe;

namespace {

constexpr int block_size = 16;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Bytes of weights one decoded token reads: attention (full, with qwen3_5_moe's output gate
// rows, or Gated DeltaNet's projections), router, its k experts and the shared expert,
// lm_head.
double bytes_per_token(const model_config& c) {
  const double h = c.hidden_size, q = double(c.num_heads) * c.head_dim;
  const double values = double(c.linear_num_value_heads) * c.linear_value_head_dim;
  double params = double(c.vocab_size) * h;
  for (int i = 0; i < c.num_layers; ++i) {
    if (c.is_linear_layer(i))  // the stacked in-projection, then out
      params += double(linear_in_width(c)) * h + h * values;
    else  // the fused q/k/v (and gate) rows, then o
      params += double(qkv_width(c)) * h + h * q;
    if (!c.is_moe_layer(i)) {
      params += 3.0 * c.intermediate_size * h;
      continue;
    }
    params += double(c.num_experts) * h + double(c.num_experts_per_tok) * 3 * c.moe_intermediate_size * h;
    if (c.shared_expert_intermediate_size > 0) params += 3.0 * c.shared_expert_intermediate_size * h + h;
  }
  return 2 * params;
}

struct sequences {
  std::vector<std::vector<int>> tables;
  std::vector<token_history> histories;
  std::vector<int> lengths;
};

// `count` sequences of `context` random tokens, prefilled in steps of at most `chunk` tokens;
// sequence i in recurrent-state slot i (models with linear-attention layers).
sequences prefill(step_runner& runner, int count, int context, int chunk, int vocab, int blocks_each) {
  sequences s;
  std::mt19937 gen(7);
  s.histories.resize(size_t(count));
  sampling_params greedy;
  greedy.temperature = 0.0f;
  for (int i = 0; i < count; ++i) {
    s.tables.emplace_back();
    for (int b = 0; b < blocks_each; ++b) s.tables.back().push_back(i * blocks_each + b);
    s.lengths.push_back(context);
  }
  for (int first = 0; first < count;) {
    forward_batch batch;
    std::vector<sample_request> samples;
    int i = first;
    for (; i < count && int(batch.token_ids.size()) + context <= std::max(chunk, context); ++i) {
      batch.sequences.push_back({int(batch.token_ids.size()), context, 0, s.tables[size_t(i)], logits_rows::last, i});
      for (int t = 0; t < context; ++t) batch.token_ids.push_back(int(gen() % uint32_t(vocab)));
      samples.push_back({greedy, &s.histories[size_t(i)], context});
    }
    if (auto r = runner.run(batch, {}, samples); !r) {
      std::fprintf(stderr, "prefill failed: %s\n", r.err().message.c_str());
      std::exit(1);
    }
    first = i;
  }
  return s;
}

// Output tokens per second of `steps` decode steps over every sequence at once.
double decode_rate(step_runner& runner, sequences& s, int steps) {
  sampling_params greedy;
  greedy.temperature = 0.0f;
  const int count = int(s.tables.size());
  std::vector<int> last(size_t(count), 1);
  auto step = [&] {
    forward_batch batch;
    std::vector<sample_request> samples;
    for (int i = 0; i < count; ++i) {
      batch.sequences.push_back({i, 1, s.lengths[size_t(i)], s.tables[size_t(i)], logits_rows::last, i});
      batch.token_ids.push_back(last[size_t(i)]);
      samples.push_back({greedy, &s.histories[size_t(i)], ++s.lengths[size_t(i)]});
    }
    auto r = runner.run(batch, {}, samples);
    if (!r) {
      std::fprintf(stderr, "decode failed: %s\n", r.err().message.c_str());
      std::exit(1);
    }
    for (int i = 0; i < count; ++i) last[size_t(i)] = r->tokens[size_t(i)].token;
  };
  for (int i = 0; i < 3; ++i) step();  // captures the graph
  const double t = now_s();
  for (int i = 0; i < steps; ++i) step();
  const double rate = double(count) * steps / (now_s() - t);
  cudaProfilerStart();  // one more for ncu --profile-from-start off
  step();
  cudaProfilerStop();
  return rate;
}

// Milliseconds a step takes when, besides one token of each sequence, a new prompt of
// `prompt` tokens is prefilled in it: what serving does whenever a request ends and the
// next is admitted. The prompt reuses the blocks of table `spare` each step.
double joined_step_ms(step_runner& runner, sequences& s, const std::vector<int>& spare, int prompt, int vocab,
                      int steps) {
  sampling_params greedy;
  greedy.temperature = 0.0f;
  std::mt19937 gen(11);
  const int count = int(s.tables.size());
  token_history prompt_history;
  auto step = [&] {
    forward_batch batch;
    std::vector<sample_request> samples;
    for (int i = 0; i < count; ++i) {
      batch.sequences.push_back({i, 1, s.lengths[size_t(i)], s.tables[size_t(i)], logits_rows::last, i});
      batch.token_ids.push_back(int(gen() % uint32_t(vocab)));  // spread routing, as real tokens have
      samples.push_back({greedy, &s.histories[size_t(i)], ++s.lengths[size_t(i)]});
    }
    batch.sequences.push_back({count, prompt, 0, spare, logits_rows::last, count});
    for (int t = 0; t < prompt; ++t) batch.token_ids.push_back(int(gen() % uint32_t(vocab)));
    prompt_history = {};
    samples.push_back({greedy, &prompt_history, prompt});
    if (auto r = runner.run(batch, {}, samples); !r) {
      std::fprintf(stderr, "mixed step failed: %s\n", r.err().message.c_str());
      std::exit(1);
    }
  };
  step();
  const double t = now_s();
  for (int i = 0; i < steps; ++i) step();
  const double ms = 1e3 * (now_s() - t) / steps;
  // One more for a profiler started with its profiling off (ncu --profile-from-start off).
  cudaProfilerStart();
  step();
  cudaProfilerStop();
  return ms;
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) v.push_back(std::atoi(item.c_str()));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: bench_gpu_forward CONFIG_DIR [--context N] [--steps N] [--batches 1,32,128] [--prefill N] "
                 "[--joining N] [--admitted N]\n");
    return 2;
  }
  int context = 512, steps = 128, prefill_len = 4096, joining = 512, admitted = 16;
  std::vector<int> batches{1, 32, 128};
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--context")
      context = std::atoi(argv[i + 1]);
    else if (flag == "--steps")
      steps = std::atoi(argv[i + 1]);
    else if (flag == "--batches")
      batches = parse_list(argv[i + 1]);
    else if (flag == "--prefill")
      prefill_len = std::atoi(argv[i + 1]);
    else if (flag == "--joining")
      joining = std::atoi(argv[i + 1]);
    else if (flag == "--admitted")
      admitted = std::atoi(argv[i + 1]);
  }
  const int max_batch = *std::max_element(batches.begin(), batches.end());
  auto weights = load_gpu_weights(argv[1], /*dummy=*/true);
  if (!weights) {
    std::fprintf(stderr, "%s\n", weights.err().message.c_str());
    return 1;
  }
  const model_config& c = (*weights)->config;
  auto experts = std::make_shared<gpu_experts>(*weights);
  experts->attach("experts", 0, c.num_experts);
  const int model_len = std::max(context + steps + std::max(8, steps / 8) + 16, prefill_len);
  const int blocks_each = (model_len + block_size - 1) / block_size;
  const int chunk = std::max({prefill_len, 4096, admitted * context});
  // One table more than the largest batch: the prompt that joins its decode steps.
  const int joined_batch = std::max(max_batch + 1, admitted);
  auto runner = gpu_step_runner::create(*weights, experts,
                                        {blocks_each * joined_batch, block_size, model_len, joined_batch, chunk});
  if (!runner) {
    std::fprintf(stderr, "%s\n", runner.err().message.c_str());
    return 1;
  }

  const double bw = bench::copy_bandwidth_gbs(size_t(2) << 30, 7), bytes = bytes_per_token(c);
  const double floor = bw * 1e9 / bytes;
  std::printf("device copy bandwidth %.0f GB/s; weights read per decoded token %.2f GB\n", bw, bytes / 1e9);
  std::printf("| measure | troupe | reference |\n| --- | --- | --- |\n");
  for (int b : batches) {
    auto seqs = prefill(**runner, b, context, chunk, c.vocab_size, blocks_each);
    const double rate = decode_rate(**runner, seqs, steps);
    if (b == 1)
      std::printf("| decode, batch 1, context %d: tokens/s | %.1f | floor %.0f (%.0f%% of it) |\n", context, rate,
                  floor, 100.0 * rate / floor);
    else
      std::printf("| decode, batch %d, context %d: output tokens/s | %.0f | |\n", b, context, rate);
    if (b > 1 && joining > 0) {
      std::vector<int> spare;
      for (int k = 0; k < blocks_each; ++k) spare.push_back(max_batch * blocks_each + k);
      const double ms = joined_step_ms(**runner, seqs, spare, joining, c.vocab_size, std::max(8, steps / 8));
      std::printf(
          "| decode, batch %d, with a %d-token prompt joining each step: ms a step | %.2f | %.2f without it |\n", b,
          joining, ms, 1e3 * b / rate);
    }
    std::fflush(stdout);
  }
  {  // the same batch-1 decode without CUDA graphs: what the graphs save
    auto eager = gpu_step_runner::create(*weights, experts, {blocks_each, block_size, model_len, 1, chunk, false});
    if (!eager) {
      std::fprintf(stderr, "%s\n", eager.err().message.c_str());
      return 1;
    }
    auto seqs = prefill(**eager, 1, context, chunk, c.vocab_size, blocks_each);
    std::printf("| decode, batch 1, context %d, no CUDA graphs: tokens/s | %.1f | |\n", context,
                decode_rate(**eager, seqs, steps));
  }
  std::vector<double> rates;
  for (int i = 0; i < 5; ++i) {
    const double t = now_s();
    prefill(**runner, 1, prefill_len, chunk, c.vocab_size, blocks_each);
    rates.push_back(prefill_len / (now_s() - t));
  }
  std::sort(rates.begin(), rates.end());
  std::printf("| prefill, one prompt of %d tokens: tokens/s (median of 5) | %.0f | |\n", prefill_len, rates[2]);
  if (admitted > 0) {
    rates.clear();
    for (int i = 0; i < 5; ++i) {
      const double t = now_s();
      prefill(**runner, admitted, context, chunk, c.vocab_size, blocks_each);
      rates.push_back(double(admitted) * context / (now_s() - t));
    }
    std::sort(rates.begin(), rates.end());
    std::printf("| prefill, %d prompts of %d tokens in one step: tokens/s (median of 5) | %.0f | |\n", admitted,
                context, rates[2]);
    cudaProfilerStart();  // one more for ncu --profile-from-start off
    prefill(**runner, admitted, context, chunk, c.vocab_size, blocks_each);
    cudaProfilerStop();
  }
  return 0;
}
