#pragma once
// Where a generation stands in a grammar: the set of parser stacks that the bytes so far
// leave alive (a pushdown automaton, as llama.cpp's grammar sampler keeps). Each stack's
// top is the position to match from next, expanded only when a byte comes, and only into
// alternatives that can start with that byte; stacks share their lower parts, stored once
// in an arena as (position, parent) nodes, so following a byte costs only the top.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "text/grammar/compiled_grammar.hpp"
#include "text/grammar/token_trie.hpp"

namespace troupe {

class grammar_matcher {
 public:
  explicit grammar_matcher(std::shared_ptr<const compiled_grammar> g);

  // Follows a token's bytes; false, and nothing changes, when they leave the language.
  bool advance(std::string_view bytes);
  // Whether the bytes so far are a whole sentence of the language.
  bool accepts_end() const { return complete_; }
  // Whether some more bytes could follow.
  bool can_continue() const;

  // Sets mask bit `id` (word id / 64) for each token of the trie that advance would take;
  // mask is resized to the trie's vocabulary. A token is taken when one stack takes it, so
  // the mask is the union over stacks. A stack's is, as in xgrammar, the tokens its top
  // positions take on their own (classes kept in the compiled grammar, so a new state
  // mostly costs OR-ing bitsets) plus what the stack below takes of the rest of the tokens
  // that run past them (a walk of those trie subtrees only). Masks are also kept per
  // state: inside a JSON string the state repeats from token to token (at most 64 masks,
  // which a copy of the matcher copies).
  void allowed_tokens(const token_trie& trie, std::vector<uint64_t>& mask);
  // Readies the grammar's token classes before a request starts (its engine's grammar
  // warmer, at admission): those of this state's mask, then those of the contexts inside
  // each repetition (compiled_grammar::repetition_contexts) until `deadline`.
  void gather_classes(const token_trie& trie, std::chrono::steady_clock::time_point deadline);
  // The same mask by walking the whole trie along with the stacks, no caches: the
  // reference the fast mask is tested against.
  void allowed_tokens_by_trie_walk(const token_trie& trie, std::vector<uint64_t>& mask);

 private:
  struct stack_node {
    int32_t position;
    int32_t parent;  // -1: the bottom; exit_marker: while classifying tokens
  };

  // The stacks the byte `b` turns `tops` into.
  void advance_byte(const std::vector<int32_t>& tops, uint8_t b, std::vector<int32_t>& out);
  // Pushes the stacks that match `b` from `position` above `parent`, each left at the
  // position after the byte.
  void match_byte(int32_t position, int32_t parent, uint8_t b, std::vector<int32_t>& out);
  // Whether the stacks of `tops` may end here: one of them can match the empty string.
  bool can_end(const std::vector<int32_t>& tops) const;
  // Keeps only the arena nodes the current stacks use.
  void compact_arena();
  // The current state as the positions of every stack, top to bottom.
  std::vector<int32_t> state_key() const;
  // What a walk from a counted run's twin keeps (compiled_grammar::token_classes::counted):
  // per trie depth the state of the node the walk stands on there, and those of the tokens
  // it takes and of the exits it lists; ambiguous once stacks at one node disagree.
  struct item_counts {
    std::vector<uint16_t> at_depth, token, exit;
    bool ambiguous = false;
  };
  // Sets the bits of the tokens strictly below trie node `from` that the stacks `tops`,
  // standing after from's bytes, take. With `exits`, lists the nodes after whose bytes a
  // stack reached exit_marker (the end of the alternative the walk started in); with
  // `counts`, counts items along the way.
  void walk_subtree(const token_trie& trie, int32_t from, const std::vector<int32_t>& tops, std::vector<uint64_t>& mask,
                    std::vector<int32_t>* exits, item_counts* counts = nullptr);
  // The items the stacks `tops` have matched since their twin's start, or counted_closed
  // and the count of the node before (`before`) once they left it.
  uint16_t items_at(const std::vector<int32_t>& tops, uint16_t before) const;
  std::shared_ptr<const compiled_grammar::token_classes> classes_of(const token_trie& trie,
                                                                    const std::vector<int32_t>& context);
  // The classes of `context` by walking the trie from it, counting items when it starts at
  // a twin.
  std::shared_ptr<const compiled_grammar::token_classes> walked_classes(const token_trie& trie,
                                                                        const std::vector<int32_t>& context,
                                                                        bool count);
  // For a context that holds a counted run's step: the step and its twin's classes (walked
  // on first use). None when it holds no step, the trie is deeper than a twin counts or the
  // twin's walk could not count.
  std::pair<const compiled_grammar::run_step*, std::shared_ptr<const compiled_grammar::token_classes>> counted_twin(
      const token_trie& trie, const std::vector<int32_t>& context);
  // The classes of such a context, out of its twin's: the tokens and exits whose count the
  // step allows.
  std::shared_ptr<const compiled_grammar::token_classes> counted_classes(const token_trie& trie,
                                                                         const std::vector<int32_t>& context);
  // The exit nodes of such a context without its classes, or none.
  std::optional<int64_t> counted_exit_nodes(const token_trie& trie, const std::vector<int32_t>& context);
  // Moves the tokens set in `bits` into the classes' accepted tokens, leaving `bits` zero.
  static void keep_accepted(std::vector<uint64_t>& bits, compiled_grammar::token_classes& classes);
  // Appends the ids of the bits set in `bits`, in order, leaving `bits` zero.
  static void move_ids(std::vector<uint64_t>& bits, std::vector<int32_t>& ids);
  // Sets the bits of the tokens the stack with top arena node `top` takes: the classes of
  // its top position, widened to the positions below while they leave much to walk.
  void stack_mask(const token_trie& trie, int32_t top, std::vector<uint64_t>& mask);

  // The parent of a stack node that stands for "whatever stack lies below".
  static constexpr int32_t exit_marker = -2;
  // items_at when stacks disagree: no count is 0x7fff.
  static constexpr uint16_t ambiguous_items = 0xffff;
  // A counted step's classes with more exits than this are worked out at each mask.
  static constexpr size_t max_kept_counted_exits = 4096;

  std::shared_ptr<const compiled_grammar> grammar_;
  std::vector<stack_node> arena_;
  std::vector<int32_t> tops_;
  bool complete_ = false;
  // Scratch of the trie walk: the stacks at each depth, and the arena size after each.
  std::vector<std::vector<int32_t>> level_tops_;
  std::vector<size_t> level_arena_size_;
  std::vector<int32_t> level_node_;
  bool exited_ = false;
  std::vector<uint64_t> classes_scratch_;  // classes_of's walk, all zero between walks
  const token_trie* cached_trie_ = nullptr;
  std::map<std::vector<int32_t>, std::vector<uint64_t>> cached_masks_;
};

}  // namespace troupe
