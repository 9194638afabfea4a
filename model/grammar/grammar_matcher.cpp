#include "model/grammar/grammar_matcher.hpp"

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
    case symbol_kind::byte_set:
      if (!grammar_->byte_matches(symbol.index, b)) return;
      for (int32_t top : out) {
        if (arena_[size_t(top)].position == position + 1 && arena_[size_t(top)].parent == parent) return;
      }
      arena_.push_back({position + 1, parent});
      out.push_back(int32_t(arena_.size() - 1));
      return;
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

void grammar_matcher::allowed_tokens_by_trie_walk(const token_trie& trie, std::vector<uint64_t>& mask) {
  mask.assign(size_t(trie.vocab_size() + 63) / 64, 0);
  walk_subtree(trie, 0, tops_, mask, nullptr);
}

std::shared_ptr<const compiled_grammar::token_classes> grammar_matcher::classes_of(
    const token_trie& trie, const std::vector<int32_t>& context) {
  if (auto found = grammar_->find_classes(&trie, context)) return found;
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
  walk_subtree(trie, 0, {parent}, classes_scratch_, &classes->exits);
  arena_.resize(committed);
  keep_accepted(classes_scratch_, *classes);
  std::sort(classes->exits.begin(), classes->exits.end());
  classes->exits.erase(std::unique(classes->exits.begin(), classes->exits.end()), classes->exits.end());
  for (int32_t exit : classes->exits) classes->exit_nodes += trie.nodes()[size_t(exit)].subtree_end - exit;
  grammar_->keep_classes(&trie, context, classes);
  return classes;
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
  for (size_t w = 0; w < bits.size(); ++w)
    for (; bits[w] != 0; bits[w] &= bits[w] - 1)
      classes.accepted_ids.push_back(int32_t(w * 64 + size_t(std::countr_zero(bits[w]))));
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
    do {
      context.push_back(arena_[size_t(below)].position);
      below = arena_[size_t(below)].parent;
      if (below < 0) context.push_back(-1);
      classes = classes_of(trie, context);
    } while (below >= 0 && classes->exit_nodes > max_exit_nodes);
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
                                   std::vector<uint64_t>& mask, std::vector<int32_t>* exits) {
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
    if (exited_ && exits) exits->push_back(level_node_[node.depth - 1u]);
    if (out.empty()) {
      i = node.subtree_end;
      continue;
    }
    for (int32_t id : trie.tokens_at(i)) mask[size_t(id) >> 6] |= uint64_t(1) << (id & 63);
    level_arena_size_[node.depth] = arena_.size();
    level_node_[node.depth] = i;
    ++i;
  }
  arena_.resize(committed);
}

}  // namespace troupe
