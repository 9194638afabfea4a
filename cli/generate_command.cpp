#include <algorithm>
#include <cstdio>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "model/single_sequence.hpp"

namespace troupe::cli {

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
  status rest = a->finish();
  std::string failure = !prompt ? prompt.err().message
                        : !max_tokens ? max_tokens.err().message
                        : !rest ? rest.err().message
                        : !dir ? "--model DIR is required"
                        : prompt->empty() ? "--prompt-ids needs at least one id"
                        : (format != "safetensors" && format != "dummy") ? "--load-format is safetensors or dummy"
                        : "";
  if (!failure.empty()) {
    std::fprintf(stderr, "troupe generate: %s\n", failure.c_str());
    return 2;
  }
  auto model = load_model(*dir, format == "dummy");
  if (!model) {
    std::fprintf(stderr, "troupe generate: %s\n", model.err().message.c_str());
    return 1;
  }
  const auto& c = (*model)->config();
  for (int id : *prompt)
    if (id < 0 || id >= c.vocab_size) {
      std::fprintf(stderr, "troupe generate: prompt id %d is outside the vocabulary (0..%d)\n", id,
                   c.vocab_size - 1);
      return 2;
    }
  single_sequence sequence(**model, int(prompt->size()) + *max_tokens);
  std::vector<int> step(*prompt);
  for (int i = 0; i < *max_tokens; ++i) {
    auto logits = sequence.forward(step);
    int next = int(std::max_element(logits.begin(), logits.end()) - logits.begin());
    std::printf("%d%s", next, i + 1 < *max_tokens ? "," : "\n");
    std::fflush(stdout);
    if (std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), next) != c.eos_token_ids.end()) {
      std::printf("\n");
      break;
    }
    step.assign(1, next);
  }
  return 0;
}

}  // namespace troupe::cli
