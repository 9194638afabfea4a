#include "text/grammar/counted_runs.hpp"

namespace troupe {

namespace {

struct step_shape {
  grammar_symbol item;
  int32_t body = -1;
  int32_t next = -1;  // -1: the last step
  bool can_stop = false;
};

std::optional<step_shape> shape_of(const grammar& g, int32_t rule, const std::vector<bool>& nullable) {
  const auto& alternatives = g.rules[size_t(rule)].alternatives;
  if (alternatives.size() > 2) return std::nullopt;
  step_shape s;
  for (size_t a = 0; a < alternatives.size(); ++a) {
    const auto& symbols = alternatives[a].symbols;
    if (symbols.empty()) {
      if (s.can_stop) return std::nullopt;
      s.can_stop = true;
      continue;
    }
    if (s.body >= 0 || symbols.size() > 2 || (symbols.size() == 2 && !symbols[1].is_rule)) return std::nullopt;
    s.body = int32_t(a);
    s.item = symbols[0];
    s.next = symbols.size() == 2 ? symbols[1].index : -1;
  }
  if (s.body < 0 || (s.item.is_rule && nullable[size_t(s.item.index)])) return std::nullopt;
  return s;
}

// The items a step and the steps after it may match, and must.
struct run_length {
  bool valid = false;
  int32_t items = 0;
  int32_t required = 0;
};

class run_measure {
 public:
  run_measure(const grammar& g, const std::vector<bool>& nullable)
      : g_(g), nullable_(nullable), state_(g.rules.size()) {}

  run_length of(int32_t rule) {
    auto& s = state_[size_t(rule)];
    if (s.mark == done) return s.length;
    if (s.mark == in_progress) return {true, unbounded_items, 0};  // a repetition without bound
    s.mark = in_progress;
    run_length length;
    if (auto shape = shape_of(g_, rule, nullable_)) {
      run_length rest{true, 0, 0};
      if (shape->next >= 0) {
        auto next = shape_of(g_, shape->next, nullable_);
        const bool cycle = state_[size_t(shape->next)].mark == in_progress;
        rest = next && next->item == shape->item && !(cycle && !shape->can_stop) ? of(shape->next) : run_length{};
      }
      if (rest.valid) {
        length.valid = true;
        length.items = rest.items == unbounded_items ? unbounded_items : rest.items + 1;
        length.required = shape->can_stop ? 0 : rest.required + 1;
      }
    }
    state_[size_t(rule)] = {done, length};
    return length;
  }

 private:
  enum mark_kind : uint8_t { unseen, in_progress, done };
  struct rule_state {
    mark_kind mark = unseen;
    run_length length;
  };
  const grammar& g_;
  const std::vector<bool>& nullable_;
  std::vector<rule_state> state_;
};

}  // namespace

std::vector<std::optional<counted_run>> find_counted_runs(const grammar& g, const std::vector<bool>& nullable) {
  std::vector<std::optional<counted_run>> runs(g.rules.size());
  run_measure measure(g, nullable);
  for (size_t r = 0; r < g.rules.size(); ++r) {
    const run_length length = measure.of(int32_t(r));
    if (!length.valid || (length.items == unbounded_items && length.required == 0)) continue;
    runs[r] = counted_run{shape_of(g, int32_t(r), nullable)->item, length.items, length.required};
  }
  return runs;
}

std::vector<int32_t> repetition_heads(const grammar& g, const std::vector<bool>& nullable) {
  std::vector<bool> is_step(g.rules.size(), false), is_next(g.rules.size(), false);
  for (size_t r = 0; r < g.rules.size(); ++r) {
    auto shape = shape_of(g, int32_t(r), nullable);
    if (!shape || shape->next < 0) continue;
    is_step[r] = true;
    if (shape->next != int32_t(r)) is_next[size_t(shape->next)] = true;
  }
  std::vector<int32_t> heads;
  for (size_t r = 0; r < g.rules.size(); ++r) {
    if (is_step[r] && !is_next[r]) heads.push_back(int32_t(r));
  }
  return heads;
}

}  // namespace troupe
