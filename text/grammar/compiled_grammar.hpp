#pragma once
// A grammar checked and laid out for matching: every alternative flattened into one array
// of positions, each alternative followed by an end marker, so a parser stack is a list of
// positions ("match from here next").
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/result.hpp"
#include "text/grammar/counted_runs.hpp"
#include "text/grammar/grammar.hpp"

namespace troupe {

// The bytes the token classes of several grammars (a grammar_cache's) may keep in all: a
// grammar past the limit works out the classes it lacks at each mask instead of keeping
// them, so one hostile schema (a long enum meets a context per byte) cannot fill memory.
class classes_budget {
 public:
  explicit classes_budget(size_t limit) : limit_(limit) {}
  // False, and nothing taken, when `bytes` more would pass the limit.
  bool take(size_t bytes);
  void give_back(size_t bytes) { used_ -= bytes; }
  size_t used() const { return used_; }
  size_t limit() const { return limit_; }

 private:
  const size_t limit_;
  std::atomic<size_t> used_{0};
};

class compiled_grammar {
 public:
  // token_classes::accepted_items and exit_items: the count, and this bit once the run ended.
  static constexpr uint16_t counted_closed = 0x8000;

  // An error names the rule when one is left-recursive (the matcher would expand it
  // forever), has no alternatives, or refers to a rule or byte set that does not exist.
  // The token classes it gathers draw on `budget`; none: they are all kept.
  static result<compiled_grammar> compile(const grammar& g, std::shared_ptr<classes_budget> budget = nullptr);

  enum class symbol_kind : uint8_t { byte_set, rule, end };
  // What the matcher asks of a position, kept together: the symbol, and whether the rest of
  // its alternative can start with a byte or be empty.
  struct position_symbol {
    symbol_kind kind = symbol_kind::end;
    int32_t index = 0;
    bool can_be_empty = false;
    std::array<uint64_t, 4> first_bytes = {0, 0, 0, 0};
  };

  const position_symbol& at(int32_t position) const { return code_[size_t(position)]; }
  bool byte_matches(int32_t byte_set_index, uint8_t b) const {
    return (byte_sets_[size_t(byte_set_index)][b >> 6] >> (b & 63)) & 1;
  }
  // Where each alternative of the rule starts.
  std::span<const int32_t> alternatives(int32_t rule) const {
    return {alternative_starts_.data() + rule_begin_[size_t(rule)],
            alternative_starts_.data() + rule_begin_[size_t(rule) + 1]};
  }
  // A position holding a reference to the root rule, followed by an end.
  int32_t start() const { return 0; }

  // Counted runs (counted_runs.hpp). At a position that calls a step of a run: the start of
  // its item's twin (a run of twin_items, which counts them: twin_count), how many items
  // the run allows from there and how many it needs, and the position the call returns to
  // (-1: a call last in its alternative returns to its caller's caller); none elsewhere.
  struct run_step {
    int32_t twin_start = 0;
    int32_t remaining = 0;
    int32_t required = 0;
    int32_t return_to = -1;
  };
  const run_step* run_step_at(int32_t position) const {
    auto found = run_steps_.find(position);
    return found == run_steps_.end() ? nullptr : &found->second;
  }
  // At a twin's position after its n-th item from its start: n; -1 elsewhere.
  int32_t twin_count(int32_t position) const {
    return position < twin_begin_ ? -1 : twin_counts_[size_t(position - twin_begin_)];
  }
  // The items a twin counts: a trie whose tokens may hold more is not counted.
  static constexpr int32_t twin_items = 255;
  // The contexts a generation meets inside each repetition (counted_runs.hpp's heads): the
  // position after its first item, alone and above each place that calls the repetition.
  // Their token classes take a walk of the vocabulary each, which the engine's grammar
  // warmer takes before a request starts rather than a decode step on first use.
  const std::vector<std::vector<int32_t>>& repetition_contexts() const { return repetition_contexts_; }

  // Whether what its alternative has from `position` on can start with byte b, or match
  // nothing at all: the matcher skips every alternative that can do neither.
  bool can_start_with(int32_t position, uint8_t b) const {
    return (code_[size_t(position)].first_bytes[b >> 6] >> (b & 63)) & 1;
  }
  bool can_start_with_any(int32_t position) const {
    auto& f = code_[size_t(position)].first_bytes;
    return (f[0] | f[1] | f[2] | f[3]) != 0;
  }
  bool can_be_empty(int32_t position) const { return code_[size_t(position)].can_be_empty; }

  // What the tokens of a vocabulary do from the top of a stack, whatever lies below the
  // `context` positions it is keyed by (top first; a final -1: the bottom of the stack):
  // those the context matches alone, and the trie nodes after whose bytes a match runs out
  // of the context, where the stack below must take the rest (grammar_matcher fills
  // these). Kept per trie (known by its address, so a trie must outlive the grammars it
  // served) and context on first use, shared by every matcher of the grammar.
  struct token_classes {
    // The tokens the context matches alone: their ids, or a bitset where that is smaller
    // (most contexts take a few tokens, and a grammar may meet thousands of contexts).
    std::vector<int32_t> accepted_ids;
    std::vector<uint64_t> accepted_bits;
    std::vector<int32_t> exits;
    int64_t exit_nodes = 0;  // the trie nodes below the exits: the work they leave
    // At a twin's start only (counted): per accepted token (then all in accepted_ids) and
    // per exit, the items matched, with counted_closed set once the run was left.
    bool counted = false;
    std::vector<uint16_t> accepted_items, exit_items;
    std::vector<int64_t> exit_nodes_by_items;  // the exit nodes, by the items before the exit

    void add_accepted_to(std::vector<uint64_t>& mask) const {
      for (size_t w = 0; w < accepted_bits.size(); ++w) mask[w] |= accepted_bits[w];
      for (int32_t id : accepted_ids) mask[size_t(id) >> 6] |= uint64_t(1) << (id & 63);
    }
  };
  std::shared_ptr<const token_classes> find_classes(const void* trie, const std::vector<int32_t>& context) const;
  void keep_classes(const void* trie, std::vector<int32_t> context, std::shared_ptr<const token_classes> classes) const;
  // What the kept token classes take, in bytes.
  size_t classes_bytes() const;

 private:
  // compile's steps: a rule's alternatives appended to the code; the twins of the counted
  // runs and the steps that call them; the repetitions' contexts; first bytes throughout.
  void lay_out(const grammar_rule& rule);
  void add_counted_runs(const std::vector<std::optional<counted_run>>& runs);
  void add_repetition_contexts(const grammar& g, const std::vector<int32_t>& heads);
  void find_first_bytes();

  struct classes_cache {
    ~classes_cache();
    std::mutex mutex;
    std::map<std::pair<const void*, std::vector<int32_t>>, std::shared_ptr<const token_classes>> by_context;
    std::shared_ptr<classes_budget> budget;
    size_t bytes = 0;  // taken from the budget
  };
  std::shared_ptr<classes_cache> classes_ = std::make_shared<classes_cache>();
  std::vector<position_symbol> code_;
  std::vector<std::array<uint64_t, 4>> byte_sets_;
  std::vector<int32_t> rule_begin_;
  std::vector<int32_t> alternative_starts_;
  std::unordered_map<int32_t, run_step> run_steps_;
  std::vector<std::vector<int32_t>> repetition_contexts_;
  int32_t twin_begin_ = std::numeric_limits<int32_t>::max();
  std::vector<int16_t> twin_counts_;
};

}  // namespace troupe
