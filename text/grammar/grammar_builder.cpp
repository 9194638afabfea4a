#include "text/grammar/grammar_builder.hpp"

#include <algorithm>

namespace troupe {

grammar_sequence grammar_builder::bytes(std::initializer_list<std::pair<uint8_t, uint8_t>> ranges) {
  byte_set set;
  for (auto [first, last] : ranges) set.add(first, last);
  return bytes(set);
}

grammar_sequence grammar_builder::bytes(const byte_set& set) { return {grammar_symbol{false, byte_set_index(set)}}; }

grammar_sequence grammar_builder::literal(std::string_view text) {
  grammar_sequence s;
  for (char c : text) s.push_back(bytes({{uint8_t(c), uint8_t(c)}})[0]);
  return s;
}

grammar_sequence grammar_builder::one_of(std::vector<std::string> texts) {
  if (texts.empty()) return rule({});  // matches nothing: compile_grammar names it
  std::sort(texts.begin(), texts.end());
  texts.erase(std::unique(texts.begin(), texts.end()), texts.end());
  return trie_of(texts, 0, texts.size(), 0);
}

grammar_sequence grammar_builder::trie_of(const std::vector<std::string>& texts, size_t first, size_t last,
                                          size_t depth) {
  std::vector<grammar_sequence> alternatives;
  size_t i = first;
  if (texts[i].size() == depth) {  // sorted: a text that ends here comes first
    alternatives.push_back({});
    ++i;
  }
  while (i < last) {
    size_t j = i + 1;
    while (j < last && texts[j][depth] == texts[i][depth]) ++j;
    // Sorted, the texts of [i, j) share what the first and the last share.
    size_t shared = depth + 1;
    while (shared < texts[i].size() && shared < texts[j - 1].size() && texts[i][shared] == texts[j - 1][shared])
      ++shared;
    grammar_sequence alternative = literal(std::string_view(texts[i]).substr(depth, shared - depth));
    if (j - i > 1 || texts[i].size() > shared) alternative = join({alternative, trie_of(texts, i, j, shared)});
    alternatives.push_back(std::move(alternative));
    i = j;
  }
  if (alternatives.size() == 1) return alternatives[0];
  return rule(std::move(alternatives));
}

grammar_sequence grammar_builder::multibyte_utf8() {
  auto tail = bytes({{0x80, 0xbf}});
  return rule({
      join({bytes({{0xc2, 0xdf}}), tail}),
      join({literal("\xe0"), bytes({{0xa0, 0xbf}}), tail}),
      join({bytes({{0xe1, 0xec}, {0xee, 0xef}}), tail, tail}),
      join({literal("\xed"), bytes({{0x80, 0x9f}}), tail}),  // not the surrogates D800-DFFF
      join({literal("\xf0"), bytes({{0x90, 0xbf}}), tail, tail}),
      join({bytes({{0xf1, 0xf3}}), tail, tail, tail}),
      join({literal("\xf4"), bytes({{0x80, 0x8f}}), tail, tail}),
  });
}

grammar_sequence grammar_builder::rule(std::vector<grammar_sequence> alternatives) {
  int32_t index = declare();
  define(index, std::move(alternatives));
  return reference(index);
}

grammar_sequence grammar_builder::repeated(grammar_sequence s) {
  int32_t index = declare();
  define(index, {join({s, reference(index)}), {}});
  return reference(index);
}

grammar_sequence grammar_builder::repeated(const grammar_sequence& s, int min_count, int max_count) {
  // One rule per repetition, "item next", with an empty alternative once min_count are
  // written: the run compiled_grammar counts along (counted_runs.hpp).
  const grammar_sequence item = s.size() == 1 ? s : rule({s});
  grammar_sequence next = max_count < 0 ? repeated(item) : grammar_sequence{};
  for (int i = max_count < 0 ? min_count : max_count; i-- > 0;) {
    std::vector<grammar_sequence> alternatives = {join({item, next})};
    if (i >= min_count) alternatives.push_back({});
    next = rule(std::move(alternatives));
  }
  return next;
}

int32_t grammar_builder::declare() {
  grammar_.rules.emplace_back();
  return int32_t(grammar_.rules.size() - 1);
}

void grammar_builder::define(int32_t rule_index, std::vector<grammar_sequence> alternatives) {
  auto& rule = grammar_.rules.at(size_t(rule_index));
  for (auto& a : alternatives) rule.alternatives.push_back(grammar_alternative{std::move(a)});
}

grammar_sequence grammar_builder::include(const grammar& other) {
  const int32_t first_rule = int32_t(grammar_.rules.size());
  std::vector<int32_t> set_index;
  for (const byte_set& set : other.byte_sets) set_index.push_back(byte_set_index(set));
  for (const grammar_rule& rule : other.rules) {
    grammar_rule copy = rule;
    for (auto& alternative : copy.alternatives)
      for (auto& symbol : alternative.symbols)
        symbol.index = symbol.is_rule ? symbol.index + first_rule : set_index.at(size_t(symbol.index));
    grammar_.rules.push_back(std::move(copy));
  }
  return reference(first_rule + other.root);
}

grammar grammar_builder::finish(grammar_sequence root) {
  if (root.size() == 1 && root[0].is_rule) {
    grammar_.root = root[0].index;
  } else {
    grammar_.root = rule({std::move(root)})[0].index;
  }
  return std::move(grammar_);
}

int32_t grammar_builder::byte_set_index(const byte_set& set) {
  auto& sets = grammar_.byte_sets;
  auto found = std::find(sets.begin(), sets.end(), set);
  if (found != sets.end()) return int32_t(found - sets.begin());
  sets.push_back(set);
  return int32_t(sets.size() - 1);
}

grammar_sequence join(std::initializer_list<grammar_sequence> parts) {
  grammar_sequence s;
  for (auto& p : parts) s.insert(s.end(), p.begin(), p.end());
  return s;
}

}  // namespace troupe
