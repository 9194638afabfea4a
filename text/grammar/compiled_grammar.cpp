#include "text/grammar/compiled_grammar.hpp"

#include <string>

#include "text/grammar/counted_runs.hpp"

namespace troupe {

namespace {

std::vector<bool> nullable_rules(const grammar& g) {
  std::vector<bool> nullable(g.rules.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < g.rules.size(); ++r) {
      if (nullable[r]) continue;
      for (auto& alt : g.rules[r].alternatives) {
        bool all = true;
        for (auto& s : alt.symbols) all = all && s.is_rule && nullable[size_t(s.index)];
        if (all) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

// The rules each rule can start with (after nullable ones): a cycle is left recursion.
std::vector<std::vector<int32_t>> left_corners(const grammar& g, const std::vector<bool>& nullable) {
  std::vector<std::vector<int32_t>> corners(g.rules.size());
  for (size_t r = 0; r < g.rules.size(); ++r) {
    for (auto& alt : g.rules[r].alternatives) {
      for (auto& s : alt.symbols) {
        if (!s.is_rule) break;
        corners[r].push_back(s.index);
        if (!nullable[size_t(s.index)]) break;
      }
    }
  }
  return corners;
}

// 0 unvisited, 1 on the current path, 2 done.
bool has_cycle_from(int32_t r, const std::vector<std::vector<int32_t>>& corners, std::vector<uint8_t>& mark) {
  if (mark[size_t(r)] == 1) return true;
  if (mark[size_t(r)] == 2) return false;
  mark[size_t(r)] = 1;
  for (int32_t next : corners[size_t(r)]) {
    if (has_cycle_from(next, corners, mark)) return true;
  }
  mark[size_t(r)] = 2;
  return false;
}

}  // namespace

bool classes_budget::take(size_t bytes) {
  size_t used = used_.load();
  do {
    if (used + bytes > limit_) return false;
  } while (!used_.compare_exchange_weak(used, used + bytes));
  return true;
}

compiled_grammar::classes_cache::~classes_cache() {
  if (budget) budget->give_back(bytes);
}

result<compiled_grammar> compiled_grammar::compile(const grammar& g, std::shared_ptr<classes_budget> budget) {
  auto rule_count = int32_t(g.rules.size());
  auto set_count = int32_t(g.byte_sets.size());
  if (g.root < 0 || g.root >= rule_count) return error{"grammar: the root rule does not exist"};
  for (int32_t r = 0; r < rule_count; ++r) {
    auto& rule = g.rules[size_t(r)];
    if (rule.alternatives.empty()) return error{"grammar: rule " + std::to_string(r) + " has no alternatives"};
    for (auto& alt : rule.alternatives) {
      for (auto& s : alt.symbols) {
        if (s.index < 0 || s.index >= (s.is_rule ? rule_count : set_count)) {
          return error{"grammar: rule " + std::to_string(r) + " refers to a missing " +
                       (s.is_rule ? "rule " : "byte set ") + std::to_string(s.index)};
        }
      }
    }
  }
  for (auto& set : g.byte_sets) {
    if (set.words.size() != 4) return error{"grammar: a byte set without 256 bits"};
  }
  const auto nullable = nullable_rules(g);
  auto corners = left_corners(g, nullable);
  std::vector<uint8_t> mark(g.rules.size(), 0);
  for (int32_t r = 0; r < rule_count; ++r) {
    if (has_cycle_from(r, corners, mark))
      return error{"grammar: rule " + std::to_string(r) + " leads into left recursion"};
  }

  compiled_grammar c;
  c.classes_->budget = std::move(budget);
  c.code_.push_back({symbol_kind::rule, g.root});
  c.code_.push_back({symbol_kind::end});
  for (auto& set : g.byte_sets) c.byte_sets_.push_back({set.words[0], set.words[1], set.words[2], set.words[3]});
  for (auto& rule : g.rules) c.lay_out(rule);
  c.add_counted_runs(find_counted_runs(g, nullable));
  c.add_repetition_contexts(g, repetition_heads(g, nullable));
  c.find_first_bytes();
  return c;
}

void compiled_grammar::lay_out(const grammar_rule& rule) {
  rule_begin_.push_back(int32_t(alternative_starts_.size()));
  for (auto& alt : rule.alternatives) {
    alternative_starts_.push_back(int32_t(code_.size()));
    for (auto& s : alt.symbols) code_.push_back({s.is_rule ? symbol_kind::rule : symbol_kind::byte_set, s.index});
    code_.push_back({symbol_kind::end});
  }
}

// A twin run per item of the counted runs, after the grammar's own rules: "item next" or
// empty, twin_items + 1 steps, each position after an item numbered by the items since the
// first. Then every call of a step, looked up through its item's twin.
void compiled_grammar::add_counted_runs(const std::vector<std::optional<counted_run>>& runs) {
  std::map<std::pair<bool, int32_t>, int32_t> twin_of_item;  // the position after its first item
  twin_begin_ = int32_t(code_.size());
  for (auto& run : runs) {
    if (!run || twin_of_item.count({run->item.is_rule, run->item.index})) continue;
    const auto first_rule = int32_t(rule_begin_.size());
    for (int32_t i = 0; i <= twin_items; ++i) {
      grammar_alternative body{{run->item}};
      if (i < twin_items) body.symbols.push_back({true, first_rule + i + 1});
      twin_counts_.resize(code_.size() - size_t(twin_begin_) + 4, -1);
      if (i < twin_items) twin_counts_[code_.size() + 1 - size_t(twin_begin_)] = int16_t(i);
      if (i == 0) twin_of_item[{run->item.is_rule, run->item.index}] = int32_t(code_.size()) + 1;
      lay_out(grammar_rule{{body, grammar_alternative{}}});
    }
  }
  rule_begin_.push_back(int32_t(alternative_starts_.size()));
  for (int32_t p = 0; p < twin_begin_; ++p) {
    const auto& symbol = code_[size_t(p)];
    if (symbol.kind != symbol_kind::rule || !runs[size_t(symbol.index)]) continue;
    const counted_run& run = *runs[size_t(symbol.index)];
    run_steps_[p] = {twin_of_item.at({run.item.is_rule, run.item.index}), run.items, run.required,
                     code_[size_t(p) + 1].kind == symbol_kind::end ? -1 : p + 1};
  }
}

void compiled_grammar::add_repetition_contexts(const grammar& g, const std::vector<int32_t>& heads) {
  std::map<int32_t, int32_t> after_first_item;  // by repetition head
  for (int32_t head : heads) {
    const int32_t body = g.rules[size_t(head)].alternatives[0].symbols.empty() ? 1 : 0;
    after_first_item[head] = alternative_starts_[size_t(rule_begin_[size_t(head)] + body)] + 1;
  }
  for (auto [head, after] : after_first_item) repetition_contexts_.push_back({after});
  for (int32_t p = 0; p < twin_begin_; ++p) {
    const auto& symbol = code_[size_t(p)];
    if (symbol.kind != symbol_kind::rule || code_[size_t(p) + 1].kind == symbol_kind::end) continue;
    if (auto head = after_first_item.find(symbol.index); head != after_first_item.end())
      repetition_contexts_.push_back({head->second, p + 1});
  }
}

// First bytes and emptiness of every position, to a fixed point (rules refer to rules).
void compiled_grammar::find_first_bytes() {
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t p = code_.size(); p-- > 0;) {
      auto& symbol = code_[p];
      std::array<uint64_t, 4> first = {0, 0, 0, 0};
      bool empty = false;
      if (symbol.kind == symbol_kind::end) {
        empty = true;
      } else if (symbol.kind == symbol_kind::byte_set) {
        first = byte_sets_[size_t(symbol.index)];
      } else {
        bool rule_empty = false;
        for (int32_t start : alternatives(symbol.index)) {
          for (int w = 0; w < 4; ++w) first[size_t(w)] |= code_[size_t(start)].first_bytes[size_t(w)];
          rule_empty = rule_empty || code_[size_t(start)].can_be_empty;
        }
        if (rule_empty) {
          for (int w = 0; w < 4; ++w) first[size_t(w)] |= code_[p + 1].first_bytes[size_t(w)];
          empty = code_[p + 1].can_be_empty;
        }
      }
      if (first != symbol.first_bytes || empty != symbol.can_be_empty) {
        symbol.first_bytes = first;
        symbol.can_be_empty = empty;
        changed = true;
      }
    }
  }
}

std::shared_ptr<const compiled_grammar::token_classes> compiled_grammar::find_classes(
    const void* trie, const std::vector<int32_t>& context) const {
  std::lock_guard lock(classes_->mutex);
  auto found = classes_->by_context.find({trie, context});
  return found == classes_->by_context.end() ? nullptr : found->second;
}

void compiled_grammar::keep_classes(const void* trie, std::vector<int32_t> context,
                                    std::shared_ptr<const token_classes> classes) const {
  // The accepted tokens, the exits, the key and about a map node.
  const size_t bytes = sizeof(token_classes) + classes->accepted_ids.size() * sizeof(int32_t) +
                       classes->accepted_bits.size() * sizeof(uint64_t) + classes->exits.size() * sizeof(int32_t) +
                       (classes->accepted_items.size() + classes->exit_items.size()) * sizeof(uint16_t) +
                       classes->exit_nodes_by_items.size() * sizeof(int64_t) + context.size() * sizeof(int32_t) + 96;
  std::lock_guard lock(classes_->mutex);
  if (classes_->budget && !classes_->budget->take(bytes)) return;
  if (!classes_->by_context.emplace(std::pair{trie, std::move(context)}, std::move(classes)).second) {
    if (classes_->budget) classes_->budget->give_back(bytes);  // another matcher kept the same
    return;
  }
  classes_->bytes += bytes;
}

size_t compiled_grammar::classes_bytes() const {
  std::lock_guard lock(classes_->mutex);
  return classes_->bytes;
}

}  // namespace troupe
