#include "text/grammar/grammar_matcher.hpp"

#include <algorithm>
#include <bit>
#include <utility>

namespace troupe {

using symbol_kind = compiled_grammar::symbol_kind;

grammar_matcher::grammar_matcher(std::shared_ptr<const compiled_grammar> g) : grammar_(std::move(g)) {
  arena_.push_back({grammar_->start(), -1});
  tops_ = {0};
  complete_ = can_end(tops_);
}

void grammar_matcher::match_byte(int32_t position, int32_t parent, uint8_t b, std::vector<int32_t>& out) {
  if (!grammar_->can_start_with(position, b) && !grammar_->can_be_empty(position)) return;
  const auto& symbol = grammar_->at(position);
  switch (symbol.kind) {
    case symbol_kind::end:
      if (parent == exit_marker) exited_ = true;
      if (parent >= 0) {
        stack_node below = arena_[size_t(parent)];
        match_byte(below.position, below.parent, b, out);
      }
      return;
    case symbol_kind::byte_set: {
      if (!grammar_->byte_matches(symbol.index, b)) return;
      // A byte that ends its alternative leaves the stack at the caller's return frame, so
      // that stacks after whole items look alike (fewer contexts for the token classes).
      if (grammar_->at(position + 1).kind == symbol_kind::end && parent >= 0) {
        if (std::find(out.begin(), out.end(), parent) == out.end()) out.push_back(parent);
        return;
      }
      for (int32_t top : out) {
        if (arena_[size_t(top)].position == position + 1 && arena_[size_t(top)].parent == parent) return;
      }
      arena_.push_back({position + 1, parent});
      out.push_back(int32_t(arena_.size() - 1));
      return;
    }
    case symbol_kind::rule: {
      // A rule called last in its alternative returns straight to the caller's caller:
      // repetition by right recursion then keeps the stack flat.
      int32_t return_to = parent;
      if (grammar_->at(position + 1).kind != symbol_kind::end) {
        arena_.push_back({position + 1, parent});
        return_to = int32_t(arena_.size() - 1);
      }
      for (int32_t start : grammar_->alternatives(symbol.index)) match_byte(start, return_to, b, out);
      return;
    }
  }
}

void grammar_matcher::advance_byte(const std::vector<int32_t>& tops, uint8_t b, std::vector<int32_t>& out) {
  for (int32_t top : tops) {
    stack_node node = arena_[size_t(top)];
    match_byte(node.position, node.parent, b, out);
  }
}

bool grammar_matcher::can_end(const std::vector<int32_t>& tops) const {
  for (int32_t top : tops) {
    int32_t n = top;
    while (n >= 0 && grammar_->can_be_empty(arena_[size_t(n)].position)) n = arena_[size_t(n)].parent;
    if (n < 0) return true;
  }
  return false;
}

bool grammar_matcher::can_continue() const {
  for (int32_t top : tops_) {
    for (int32_t n = top; n >= 0; n = arena_[size_t(n)].parent) {
      if (grammar_->can_start_with_any(arena_[size_t(n)].position)) return true;
      if (!grammar_->can_be_empty(arena_[size_t(n)].position)) break;
    }
  }
  return false;
}

bool grammar_matcher::advance(std::string_view bytes) {
  size_t arena_before = arena_.size();
  std::vector<int32_t> tops = tops_, next;
  for (char c : bytes) {
    next.clear();
    advance_byte(tops, uint8_t(c), next);
    if (next.empty()) {
      arena_.resize(arena_before);
      return false;
    }
    std::swap(tops, next);
  }
  tops_ = std::move(tops);
  compact_arena();
  complete_ = can_end(tops_);
  return true;
}

// A node's parent is always older than it, so one pass in id order renumbers them all.
void grammar_matcher::compact_arena() {
  std::vector<int32_t> new_id(arena_.size(), -1);
  for (int32_t top : tops_) {
    for (int32_t n = top; n >= 0 && new_id[size_t(n)] < 0; n = arena_[size_t(n)].parent) new_id[size_t(n)] = 0;
  }
  int32_t kept = 0;
  for (size_t n = 0; n < arena_.size(); ++n) {
    if (new_id[n] < 0) continue;
    stack_node node = arena_[n];
    if (node.parent >= 0) node.parent = new_id[size_t(node.parent)];
    arena_[size_t(kept)] = node;
    new_id[n] = kept++;
  }
  arena_.resize(size_t(kept));
  for (int32_t& top : tops_) top = new_id[size_t(top)];
}

std::vector<int32_t> grammar_matcher::state_key() const {
  std::vector<int32_t> key = {complete_ ? 1 : 0};
  for (int32_t top : tops_) {
    for (int32_t n = top; n >= 0; n = arena_[size_t(n)].parent) key.push_back(arena_[size_t(n)].position);
    key.push_back(-1);
  }
  return key;
}

void grammar_matcher::allowed_tokens(const token_trie& trie, std::vector<uint64_t>& mask) {
  constexpr size_t max_cached_masks = 64;
  if (cached_trie_ != &trie || cached_masks_.size() >= max_cached_masks) {
    cached_masks_.clear();
    cached_trie_ = &trie;
  }
  auto key = state_key();
  if (auto found = cached_masks_.find(key); found != cached_masks_.end()) {
    mask = found->second;
    return;
  }
  mask.assign(size_t(trie.vocab_size() + 63) / 64, 0);
  for (int32_t top : tops_) stack_mask(trie, top, mask);
  cached_masks_.emplace(std::move(key), mask);
}

void grammar_matcher::gather_classes(const token_trie& trie, std::chrono::steady_clock::time_point deadline) {
  std::vector<uint64_t> mask;
  allowed_tokens(trie, mask);
  for (const auto& context : grammar_->repetition_contexts()) {
    if (std::chrono::steady_clock::now() > deadline) return;
    classes_of(trie, context);
  }
}

void grammar_matcher::allowed_tokens_by_trie_walk(const token_trie& trie, std::vector<uint64_t>& mask) {
  mask.assign(size_t(trie.vocab_size() + 63) / 64, 0);
  walk_subtree(trie, 0, tops_, mask, nullptr);
}

std::shared_ptr<const compiled_grammar::token_classes> grammar_matcher::classes_of(
    const token_trie& trie, const std::vector<int32_t>& context) {
  if (auto found = grammar_->find_classes(&trie, context)) return found;
  if (auto counted = counted_classes(trie, context)) return counted;
  auto classes = walked_classes(trie, context, false);
  grammar_->keep_classes(&trie, context, classes);
  return classes;
}

std::shared_ptr<const compiled_grammar::token_classes> grammar_matcher::walked_classes(
    const token_trie& trie, const std::vector<int32_t>& context, bool count) {
  auto classes = std::make_shared<compiled_grammar::token_classes>();
  classes_scratch_.resize(size_t(trie.vocab_size() + 63) / 64, 0);  // all zero between walks
  size_t committed = arena_.size();
  int32_t parent = exit_marker;
  for (size_t k = context.size(); k-- > 0;) {
    if (context[k] < 0) {
      parent = -1;
      continue;
    }
    arena_.push_back({context[k], parent});
    parent = int32_t(arena_.size() - 1);
  }
  item_counts counts;
  if (count) {
    counts.at_depth.assign(size_t(trie.max_depth()) + 1, 0);
    counts.token.assign(size_t(trie.vocab_size()), 0);
  }
  walk_subtree(trie, 0, {parent}, classes_scratch_, &classes->exits, count ? &counts : nullptr);
  arena_.resize(committed);
  if (count && !counts.ambiguous) {
    classes->counted = true;
    move_ids(classes_scratch_, classes->accepted_ids);
    for (int32_t id : classes->accepted_ids) classes->accepted_items.push_back(counts.token[size_t(id)]);
    std::vector<std::pair<int32_t, uint16_t>> exits;
    for (size_t i = 0; i < classes->exits.size(); ++i) exits.emplace_back(classes->exits[i], counts.exit[i]);
    std::sort(exits.begin(), exits.end());
    exits.erase(std::unique(exits.begin(), exits.end()), exits.end());
    classes->exits.clear();
    classes->exit_nodes_by_items.assign(compiled_grammar::twin_items + 1, 0);
    for (auto [exit, items] : exits) {
      classes->exits.push_back(exit);
      classes->exit_items.push_back(items);
      classes->exit_nodes_by_items[items & ~compiled_grammar::counted_closed] +=
          trie.nodes()[size_t(exit)].subtree_end - exit;
    }
  } else {
    keep_accepted(classes_scratch_, *classes);
    std::sort(classes->exits.begin(), classes->exits.end());
    classes->exits.erase(std::unique(classes->exits.begin(), classes->exits.end()), classes->exits.end());
  }
  for (int32_t exit : classes->exits) classes->exit_nodes += trie.nodes()[size_t(exit)].subtree_end - exit;
  return classes;
}

std::pair<const compiled_grammar::run_step*, std::shared_ptr<const compiled_grammar::token_classes>>
grammar_matcher::counted_twin(const token_trie& trie, const std::vector<int32_t>& context) {
  if (trie.max_depth() >= compiled_grammar::twin_items) return {};
  const compiled_grammar::run_step* step = nullptr;
  size_t at = 0;
  for (; at < context.size() && context[at] >= 0 && !step; ++at) step = grammar_->run_step_at(context[at]);
  if (!step) return {};
  // The call's context, as the stack stands once it has called the twin instead.
  auto twin_context = context;
  twin_context[at - 1] = step->twin_start;
  if (step->return_to >= 0) twin_context.insert(twin_context.begin() + std::ptrdiff_t(at), step->return_to);
  auto twin = grammar_->find_classes(&trie, twin_context);
  if (!twin) {
    twin = walked_classes(trie, twin_context, true);
    grammar_->keep_classes(&trie, twin_context, twin);
  }
  if (!twin->counted) return {};
  return {step, std::move(twin)};
}

namespace {

bool count_allows(const compiled_grammar::run_step& step, uint16_t items) {
  const int32_t n = items & ~compiled_grammar::counted_closed;
  return n <= step.remaining && ((items & compiled_grammar::counted_closed) == 0 || n >= step.required);
}

}  // namespace

std::shared_ptr<const compiled_grammar::token_classes> grammar_matcher::counted_classes(
    const token_trie& trie, const std::vector<int32_t>& context) {
  auto [step, twin] = counted_twin(trie, context);
  if (!step) return nullptr;
  auto classes = std::make_shared<compiled_grammar::token_classes>();
  classes_scratch_.resize(size_t(trie.vocab_size() + 63) / 64, 0);
  for (size_t i = 0; i < twin->accepted_ids.size(); ++i) {
    const int32_t id = twin->accepted_ids[i];
    if (count_allows(*step, twin->accepted_items[i])) classes_scratch_[size_t(id) >> 6] |= uint64_t(1) << (id & 63);
  }
  keep_accepted(classes_scratch_, *classes);
  for (size_t i = 0; i < twin->exits.size(); ++i) {
    if (!count_allows(*step, twin->exit_items[i] | compiled_grammar::counted_closed)) continue;
    classes->exits.push_back(twin->exits[i]);
    classes->exit_nodes += trie.nodes()[size_t(twin->exits[i])].subtree_end - twin->exits[i];
  }
  // Kept unless they list many exits: stack_mask widens such a context (counted_exit_nodes)
  // and needs them only at the bottom of a stack.
  if (classes->exits.size() <= max_kept_counted_exits) grammar_->keep_classes(&trie, context, classes);
  return classes;
}

std::optional<int64_t> grammar_matcher::counted_exit_nodes(const token_trie& trie,
                                                           const std::vector<int32_t>& context) {
  if (auto found = grammar_->find_classes(&trie, context)) return found->exit_nodes;
  auto [step, twin] = counted_twin(trie, context);
  if (!step) return std::nullopt;
  int64_t nodes = 0;
  const auto last = size_t(std::min<int64_t>(step->remaining, int64_t(twin->exit_nodes_by_items.size()) - 1));
  for (size_t n = size_t(step->required); n <= last; ++n) nodes += twin->exit_nodes_by_items[n];
  return nodes;
}

void grammar_matcher::keep_accepted(std::vector<uint64_t>& bits, compiled_grammar::token_classes& classes) {
  size_t count = 0;
  for (uint64_t w : bits) count += size_t(std::popcount(w));
  if (count * sizeof(int32_t) >= bits.size() * sizeof(uint64_t)) {
    classes.accepted_bits = bits;
    std::fill(bits.begin(), bits.end(), 0);
    return;
  }
  classes.accepted_ids.reserve(count);
  move_ids(bits, classes.accepted_ids);
}

void grammar_matcher::move_ids(std::vector<uint64_t>& bits, std::vector<int32_t>& ids) {
  for (size_t w = 0; w < bits.size(); ++w)
    for (; bits[w] != 0; bits[w] &= bits[w] - 1) ids.push_back(int32_t(w * 64 + size_t(std::countr_zero(bits[w]))));
}

void grammar_matcher::stack_mask(const token_trie& trie, int32_t top, std::vector<uint64_t>& mask) {
  // Past this much work left to the stack below, a context one position deeper pays: its
  // classes are kept, the walk would be redone for every new state.
  constexpr int64_t max_exit_nodes = 2048;
  // An exit after no bytes at all hands the whole vocabulary to the stack below: the loop.
  std::vector<int32_t> context;
  for (int32_t node = top; node >= 0;) {
    context.clear();
    std::shared_ptr<const compiled_grammar::token_classes> classes;
    int32_t below = node;
    int64_t exit_nodes = 0;
    do {
      classes = nullptr;
      context.push_back(arena_[size_t(below)].position);
      below = arena_[size_t(below)].parent;
      if (below < 0) {
        context.push_back(-1);
        break;
      }
      if (auto counted = counted_exit_nodes(trie, context)) {
        exit_nodes = *counted;
      } else {
        classes = classes_of(trie, context);
        exit_nodes = classes->exit_nodes;
      }
    } while (exit_nodes > max_exit_nodes);
    if (!classes) classes = classes_of(trie, context);
    classes->add_accepted_to(mask);
    if (below < 0) return;
    bool exits_at_root = false;
    for (int32_t exit : classes->exits) {
      if (exit == 0) {
        exits_at_root = true;
      } else {
        walk_subtree(trie, exit, {below}, mask, nullptr);
      }
    }
    if (!exits_at_root) return;
    node = below;
  }
}

void grammar_matcher::walk_subtree(const token_trie& trie, int32_t from, const std::vector<int32_t>& tops,
                                   std::vector<uint64_t>& mask, std::vector<int32_t>* exits, item_counts* counts) {
  const auto& nodes = trie.nodes();
  size_t committed = arena_.size();
  level_tops_.resize(size_t(trie.max_depth()) + 1);
  level_arena_size_.resize(size_t(trie.max_depth()) + 1);
  level_node_.resize(size_t(trie.max_depth()) + 1);
  size_t base = nodes[size_t(from)].depth;
  level_tops_[base] = tops;
  level_arena_size_[base] = committed;
  level_node_[base] = from;
  for (int32_t i = from + 1; i < nodes[size_t(from)].subtree_end;) {
    const auto& node = nodes[size_t(i)];
    // The stacks of the node's parent are those of the level above: preorder left them there.
    arena_.resize(level_arena_size_[node.depth - 1u]);
    auto& out = level_tops_[node.depth];
    out.clear();
    exited_ = false;
    advance_byte(level_tops_[node.depth - 1u], node.byte, out);
    if (exited_ && exits) {
      exits->push_back(level_node_[node.depth - 1u]);
      if (counts) counts->exit.push_back(counts->at_depth[node.depth - 1u]);
    }
    if (out.empty()) {
      i = node.subtree_end;
      continue;
    }
    if (counts) {
      const uint16_t items = items_at(out, counts->at_depth[node.depth - 1u]);
      counts->ambiguous = counts->ambiguous || items == ambiguous_items;
      counts->at_depth[node.depth] = items;
      for (int32_t id : trie.tokens_at(i)) counts->token[size_t(id)] = items;
    }
    for (int32_t id : trie.tokens_at(i)) mask[size_t(id) >> 6] |= uint64_t(1) << (id & 63);
    level_arena_size_[node.depth] = arena_.size();
    level_node_[node.depth] = i;
    ++i;
  }
  arena_.resize(committed);
}

uint16_t grammar_matcher::items_at(const std::vector<int32_t>& tops, uint16_t before) const {
  int32_t items = -1;
  for (int32_t top : tops) {
    int32_t count = -1;
    for (int32_t n = top; n >= 0 && count < 0; n = arena_[size_t(n)].parent)
      count = grammar_->twin_count(arena_[size_t(n)].position);
    const int32_t here = count >= 0 ? count : before | compiled_grammar::counted_closed;
    if (items >= 0 && here != items) return ambiguous_items;
    items = here;
  }
  return uint16_t(items);
}

}  // namespace troupe
