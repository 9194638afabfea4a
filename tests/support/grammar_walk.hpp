#pragma once
// Grammar tests' walks: a matcher of a grammar, and random texts of its language made
// token by token from what the mask allows. Needs Boost.Test included first.
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "text/grammar/grammar_matcher.hpp"

namespace troupe::test {

inline grammar_matcher matcher_of(const grammar& g) {
  auto compiled = compiled_grammar::compile(g);
  BOOST_REQUIRE_MESSAGE(compiled.ok(), (compiled.ok() ? "" : compiled.err().message));
  return grammar_matcher(std::make_shared<const compiled_grammar>(std::move(compiled).value()));
}

// Random allowed tokens until the grammar may end (then a coin decides) or nothing is
// allowed; the text, or nothing if the walk ran out of steps. With check_mask, every
// token's bit in the mask is checked against what advance takes.
inline std::optional<std::string> random_walk(grammar_matcher m, const token_trie& trie,
                                              const std::vector<std::string>& vocabulary, uint32_t seed,
                                              int max_steps = 20000, bool check_mask = false) {
  std::mt19937 gen(seed);
  std::string text;
  std::vector<uint64_t> mask;
  for (int step = 0; step < max_steps; ++step) {
    m.allowed_tokens(trie, mask);
    std::vector<int> allowed;
    for (int id = 0; id < trie.vocab_size(); ++id) {
      bool in_mask = (mask[size_t(id) / 64] >> (id % 64)) & 1;
      if (in_mask) allowed.push_back(id);
      if (check_mask) {
        auto copy = m;
        bool takes = !vocabulary[size_t(id)].empty() && copy.advance(vocabulary[size_t(id)]);
        BOOST_REQUIRE_MESSAGE(in_mask == takes, "after '" << text << "', token '" << vocabulary[size_t(id)] << "'");
      }
    }
    if (m.accepts_end() && (allowed.empty() || gen() % 2)) return text;
    BOOST_REQUIRE_MESSAGE(!allowed.empty(), "a dead end after '" << text << "'");
    int id = allowed[gen() % allowed.size()];
    BOOST_REQUIRE(m.advance(vocabulary[size_t(id)]));
    text += vocabulary[size_t(id)];
  }
  return std::nullopt;
}

}  // namespace troupe::test
