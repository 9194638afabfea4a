// CPU prefill and decode throughput of the forward pass (qwen3_moe or qwen3_5_moe). Prints medians.
//   bench_cpu_forward --model DIR [--load-format dummy] [--layers N] [--prompt N] [--decode N] [--runs N]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "model/single_sequence.hpp"

using namespace troupe;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  bool dummy = false;
  int layers = 0, prompt_len = 128, decode_len = 32, runs = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--model")
      dir = value;
    else if (flag == "--load-format")
      dummy = value == "dummy";
    else if (flag == "--layers")
      layers = std::stoi(value);
    else if (flag == "--prompt")
      prompt_len = std::stoi(value);
    else if (flag == "--decode")
      decode_len = std::stoi(value);
    else if (flag == "--runs")
      runs = std::stoi(value);
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  auto config = load_model_config(dir);
  if (!config) {
    std::fprintf(stderr, "%s\n", config.err().message.c_str());
    return 1;
  }
  if (layers > 0) config->num_layers = std::min(layers, config->num_layers);
  model_weights weights;
  if (dummy) {
    weights = make_dummy_weights(*config, 0);
  } else {
    auto ckpt = checkpoint::open(dir);
    if (!ckpt) return std::fprintf(stderr, "%s\n", ckpt.err().message.c_str()), 1;
    auto w = load_weights(*config, std::make_shared<checkpoint>(std::move(*ckpt)));
    if (!w) return std::fprintf(stderr, "%s\n", w.err().message.c_str()), 1;
    weights = std::move(*w);
  }
  const auto model = make_model(*config, std::move(weights));

  std::vector<int> prompt(static_cast<size_t>(prompt_len));
  for (int i = 0; i < prompt_len; ++i) prompt[size_t(i)] = (i * 7919 + 13) % config->vocab_size;
  std::vector<double> prefill, decode;
  for (int r = 0; r < runs + 1; ++r) {  // the first run warms caches and pages
    single_sequence sequence(*model, prompt_len + decode_len);
    auto t0 = std::chrono::steady_clock::now();
    auto logits = sequence.forward(prompt);
    const double tp = seconds_since(t0);
    int next = int(std::max_element(logits.begin(), logits.end()) - logits.begin());
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < decode_len; ++i) {
      logits = sequence.forward(std::vector<int>{next});
      next = int(std::max_element(logits.begin(), logits.end()) - logits.begin());
    }
    const double td = seconds_since(t0);
    if (r == 0) continue;
    prefill.push_back(prompt_len / tp);
    decode.push_back(decode_len / td);
  }
  std::printf("model %s%s: %d layers, hidden %d, %d experts top-%d, %d threads\n", dir.c_str(),
              dummy ? " (dummy weights)" : "", config->num_layers, config->hidden_size, config->num_experts,
              config->num_experts_per_tok, omp_get_max_threads());
  std::printf("prefill %d tokens: %.1f tok/s (median of %d)\n", prompt_len, median(prefill), runs);
  std::printf("decode %d tokens:  %.1f tok/s (median of %d)\n", decode_len, median(decode), runs);
  return 0;
}
