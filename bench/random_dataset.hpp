#pragma once
// The "random" dataset of vLLM's serving benchmark: prompts of random tokens, lengths drawn
// uniformly within range_ratio of the asked ones, reproducible from the seed.
#include <cstdint>
#include <string>
#include <vector>

#include "base/result.hpp"

namespace troupe::bench {

struct bench_prompt {
  std::vector<int> ids;  // token ids in [1000, 100000): the length is exact on any vocabulary that large
  std::string text;      // random common words, about one token each (chat takes text only)
  int input_len = 0;
  int output_len = 0;
  int seed = -1;  // the request's sampling seed; -1: none sent
};

struct random_dataset_options {
  int num_prompts = 1000;
  int input_len = 1024;
  int output_len = 128;
  double range_ratio = 0.0;  // lengths in [len * (1 - r), len * (1 + r)]
  uint64_t seed = 0;
  bool as_text = false;
};

result<std::vector<bench_prompt>> random_prompts(const random_dataset_options& o);

}  // namespace troupe::bench
