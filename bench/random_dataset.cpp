#include "bench/random_dataset.hpp"

#include <cmath>
#include <random>

namespace troupe::bench {
namespace {

// Common English words that byte-level BPE vocabularies (GPT-2, Llama 3, Qwen) hold as one
// token with their leading space, so N words make about N tokens.
constexpr const char* words[] = {
    "the",   "of",    "and",   "to",    "in",    "is",    "that",  "for",   "it",     "as",   "was",   "with",  "be",
    "by",    "on",    "not",   "he",    "this",  "are",   "or",    "his",   "from",   "at",   "which", "but",   "have",
    "an",    "had",   "they",  "you",   "were",  "their", "one",   "all",   "we",     "can",  "her",   "has",   "there",
    "been",  "if",    "more",  "when",  "will",  "would", "who",   "so",    "no",     "time", "world", "water", "house",
    "light", "river", "green", "small", "great", "story", "music", "table", "window", "city", "night", "paper"};

int draw_len(std::mt19937_64& gen, int len, double ratio) {
  const int lo = std::max(1, int(std::floor(len * (1 - ratio))));
  const int hi = std::max(lo, int(std::ceil(len * (1 + ratio))));
  return std::uniform_int_distribution<int>(lo, hi)(gen);
}

}  // namespace

result<std::vector<bench_prompt>> random_prompts(const random_dataset_options& o) {
  if (o.num_prompts < 1) return error{"--num-prompts must be at least 1"};
  if (o.input_len < 1 || o.output_len < 1)
    return error{"--random-input-len and --random-output-len must be at least 1"};
  if (!(o.range_ratio >= 0 && o.range_ratio < 1)) return error{"--random-range-ratio must be in [0, 1)"};
  std::mt19937_64 gen(o.seed);
  std::uniform_int_distribution<int> token(1000, 99999);
  std::uniform_int_distribution<size_t> word(0, std::size(words) - 1);
  std::vector<bench_prompt> out(size_t(o.num_prompts));
  for (auto& p : out) {
    p.input_len = draw_len(gen, o.input_len, o.range_ratio);
    p.output_len = draw_len(gen, o.output_len, o.range_ratio);
    for (int i = 0; i < p.input_len; ++i) {
      if (!o.as_text) {
        p.ids.push_back(token(gen));
        continue;
      }
      if (i) p.text += ' ';
      p.text += words[word(gen)];
    }
  }
  return out;
}

}  // namespace troupe::bench
