#include <algorithm>
#include <cstdio>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "model/single_sequence.hpp"
#ifdef TROUPE_WITH_CUDA
#include "model/cuda/gpu_single_sequence.hpp"
#endif

namespace troupe::cli {
namespace {

// Greedy tokens after the prompt, printed as they come, until max_tokens or an eos id;
// `next` appends tokens to the sequence and gives the token after them.
template <class Next>
int print_greedy(const std::vector<int>& prompt, int max_tokens, const model_config& c, Next next) {
  std::vector<int> step(prompt);
  for (int i = 0; i < max_tokens; ++i) {
    auto token = next(step);
    if (!token) {
      std::fprintf(stderr, "troupe generate: %s\n", token.err().message.c_str());
      return 1;
    }
    std::printf("%d%s", *token, i + 1 < max_tokens ? "," : "\n");
    std::fflush(stdout);
    if (std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), *token) != c.eos_token_ids.end()) {
      std::printf("\n");
      break;
    }
    step.assign(1, *token);
  }
  return 0;
}

// The same on one GPU, the whole step there.
int generate_on_gpu(const std::string& dir, bool dummy, const std::vector<int>& prompt, int max_tokens) {
#ifdef TROUPE_WITH_CUDA
  auto sequence = gpu_single_sequence::load(dir, dummy, int(prompt.size()) + max_tokens);
  if (!sequence) {
    std::fprintf(stderr, "troupe generate: %s\n", sequence.err().message.c_str());
    return 1;
  }
  return print_greedy(prompt, max_tokens, (*sequence)->config(),
                      [&](const std::vector<int>& step) { return (*sequence)->forward(step); });
#else
  (void)dir, (void)dummy, (void)prompt, (void)max_tokens;
  std::fprintf(stderr,
               "troupe generate: --device cuda: this build has no CUDA (nvcc was not found when it was configured)\n");
  return 1;
#endif
}

}  // namespace

int generate_command(int argc, char** argv) {
  auto a = args::parse(argc, argv, {});
  if (!a) {
    std::fprintf(stderr, "troupe generate: %s\n", a.err().message.c_str());
    return 2;
  }
  auto dir = a->take("--model");
  auto prompt = a->take_int_list("--prompt-ids");
  auto max_tokens = a->take_int("--max-tokens", 16);
  auto format = a->take("--load-format").value_or("safetensors");
  auto device = a->take("--device").value_or("cpu");
  status rest = a->finish();
  std::string failure = !prompt                                          ? prompt.err().message
                        : !max_tokens                                    ? max_tokens.err().message
                        : !rest                                          ? rest.err().message
                        : !dir                                           ? "--model DIR is required"
                        : prompt->empty()                                ? "--prompt-ids needs at least one id"
                        : (format != "safetensors" && format != "dummy") ? "--load-format is safetensors or dummy"
                        : (device != "cpu" && device != "cuda")          ? "--device must be cpu or cuda, not " + device
                                                                         : "";
  if (!failure.empty()) {
    std::fprintf(stderr, "troupe generate: %s\n", failure.c_str());
    return 2;
  }
  auto config = load_model_config(*dir);
  if (!config) {
    std::fprintf(stderr, "troupe generate: %s\n", config.err().message.c_str());
    return 1;
  }
  for (int id : *prompt)
    if (id < 0 || id >= config->vocab_size) {
      std::fprintf(stderr, "troupe generate: prompt id %d is outside the vocabulary (0..%d)\n", id,
                   config->vocab_size - 1);
      return 2;
    }
  if (device == "cuda") return generate_on_gpu(*dir, format == "dummy", *prompt, *max_tokens);
  auto model = load_model(*dir, format == "dummy");
  if (!model) {
    std::fprintf(stderr, "troupe generate: %s\n", model.err().message.c_str());
    return 1;
  }
  single_sequence sequence(**model, int(prompt->size()) + *max_tokens);
  return print_greedy(*prompt, *max_tokens, (*model)->config(), [&](const std::vector<int>& step) -> result<int> {
    const auto logits = sequence.forward(step);
    return int(std::max_element(logits.begin(), logits.end()) - logits.begin());
  });
}

}  // namespace troupe::cli
