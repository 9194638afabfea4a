#include "text/grammar/regex_automaton.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace troupe {

namespace {

constexpr size_t max_nfa_states = 20000;
constexpr size_t max_subset_work = 10'000'000;  // NFA moves looked at while determinizing

using byte_sequence = std::vector<std::pair<uint8_t, uint8_t>>;

void encode(uint32_t cp, uint8_t* out, int& length) {
  if (cp < 0x80) {
    out[0] = uint8_t(cp);
    length = 1;
  } else if (cp < 0x800) {
    out[0] = uint8_t(0xc0 | (cp >> 6));
    out[1] = uint8_t(0x80 | (cp & 0x3f));
    length = 2;
  } else if (cp < 0x10000) {
    out[0] = uint8_t(0xe0 | (cp >> 12));
    out[1] = uint8_t(0x80 | ((cp >> 6) & 0x3f));
    out[2] = uint8_t(0x80 | (cp & 0x3f));
    length = 3;
  } else {
    out[0] = uint8_t(0xf0 | (cp >> 18));
    out[1] = uint8_t(0x80 | ((cp >> 12) & 0x3f));
    out[2] = uint8_t(0x80 | ((cp >> 6) & 0x3f));
    out[3] = uint8_t(0x80 | (cp & 0x3f));
    length = 4;
  }
}

// Splits [lo, hi] until each piece's encodings share a length and vary, byte by byte,
// over whole ranges: each piece is then one byte_sequence.
void split_range(uint32_t lo, uint32_t hi, std::vector<byte_sequence>& out) {
  for (uint32_t boundary : {0x7fu, 0x7ffu, 0xffffu}) {
    if (lo <= boundary && hi > boundary) {
      split_range(lo, boundary, out);
      split_range(boundary + 1, hi, out);
      return;
    }
  }
  uint8_t a[4], b[4];
  int length = 0;
  encode(lo, a, length);
  encode(hi, b, length);
  for (int i = 1; i < length; ++i) {
    const uint32_t low_bits = (1u << (6 * i)) - 1;
    if ((lo & ~low_bits) != (hi & ~low_bits)) {
      if ((lo & low_bits) != 0) {
        split_range(lo, lo | low_bits, out);
        split_range((lo | low_bits) + 1, hi, out);
        return;
      }
      if ((hi & low_bits) != low_bits) {
        split_range(lo, (hi & ~low_bits) - 1, out);
        split_range(hi & ~low_bits, hi, out);
        return;
      }
    }
  }
  byte_sequence sequence;
  for (int i = 0; i < length; ++i) sequence.push_back({a[i], b[i]});
  out.push_back(std::move(sequence));
}

// A Thompson automaton: byte moves, empty moves, and the empty moves of ^ (taken only
// before the first byte) and $ (after which no byte may come).
class nfa {
 public:
  struct move {
    uint8_t first, last;
    int32_t to;
  };
  struct state {
    std::vector<move> moves;
    std::vector<int32_t> empty, at_start, at_end;
  };
  struct fragment {
    int32_t in, out;
  };

  int32_t add() {
    if (states_.size() >= max_nfa_states) {
      overflow_ = true;
      return 0;  // the build is abandoned; any index keeps it well-formed until then
    }
    states_.emplace_back();
    return int32_t(states_.size() - 1);
  }
  bool overflow() const { return overflow_; }
  std::vector<state>& states() { return states_; }

  fragment build(const regex_node& n) {
    using kind = regex_node::kind;
    fragment f{add(), add()};
    if (overflow_) return f;
    switch (n.type) {
      case kind::characters:
        for (auto& sequence : utf8_sequences(n.characters)) {
          int32_t at = f.in;
          for (size_t i = 0; i < sequence.size(); ++i) {
            int32_t to = i + 1 == sequence.size() ? f.out : add();
            if (overflow_) return f;
            states_[size_t(at)].moves.push_back({sequence[i].first, sequence[i].second, to});
            at = to;
          }
        }
        break;
      case kind::line_start:
        states_[size_t(f.in)].at_start.push_back(f.out);
        break;
      case kind::line_end:
        states_[size_t(f.in)].at_end.push_back(f.out);
        break;
      case kind::sequence: {
        int32_t at = f.in;
        for (auto& child : n.children) {
          auto c = build(child);
          if (overflow_) return f;
          states_[size_t(at)].empty.push_back(c.in);
          at = c.out;
        }
        states_[size_t(at)].empty.push_back(f.out);
        break;
      }
      case kind::alternation:
        for (auto& child : n.children) {
          auto c = build(child);
          if (overflow_) return f;
          states_[size_t(f.in)].empty.push_back(c.in);
          states_[size_t(c.out)].empty.push_back(f.out);
        }
        break;
      case kind::repetition: {
        const regex_node& child = n.children[0];
        int32_t at = f.in;
        for (int i = 0; i < n.min_count && !overflow_; ++i) {
          auto c = build(child);
          states_[size_t(at)].empty.push_back(c.in);
          at = c.out;
        }
        if (overflow_) return f;
        if (n.max_count < 0) {
          auto c = build(child);
          if (overflow_) return f;
          states_[size_t(at)].empty.push_back(c.in);
          states_[size_t(c.out)].empty.push_back(at);
        } else {
          for (int i = n.min_count; i < n.max_count && !overflow_; ++i) {
            auto c = build(child);
            if (overflow_) return f;
            states_[size_t(at)].empty.push_back(f.out);
            states_[size_t(at)].empty.push_back(c.in);
            at = c.out;
          }
        }
        states_[size_t(at)].empty.push_back(f.out);
        break;
      }
    }
    return f;
  }

  // Any one character, looping on `state`.
  void any_character_loop(int32_t state) {
    for (auto& sequence : utf8_sequences({{0, 0x10ffff}})) {
      int32_t at = state;
      for (size_t i = 0; i < sequence.size(); ++i) {
        int32_t to = i + 1 == sequence.size() ? state : add();
        if (overflow_) return;
        states_[size_t(at)].moves.push_back({sequence[i].first, sequence[i].second, to});
        at = to;
      }
    }
  }

 private:
  std::vector<state> states_;
  bool overflow_ = false;
};

// Subset construction. A subset is a sorted list of 2 * state + (1 if only the end may
// follow: it came through a $).
class determinizer {
 public:
  determinizer(nfa& n, int32_t accept) : states_(n.states()), accept_(accept) {}

  result<byte_automaton> run(int32_t start) {
    byte_automaton out;
    std::vector<std::vector<int32_t>> subsets;
    std::map<std::vector<int32_t>, int32_t> index;
    auto first = closure({2 * start}, true);
    index[first] = out.add_state(accepts(first));
    subsets.push_back(std::move(first));
    for (size_t i = 0; i < subsets.size(); ++i) {
      std::vector<std::vector<int32_t>> targets(256);
      for (int32_t item : subsets[i]) {
        if (item & 1) continue;
        for (auto& m : states_[size_t(item / 2)].moves) {
          work_ += size_t(m.last - m.first) + 1;
          for (int b = m.first; b <= m.last; ++b) targets[size_t(b)].push_back(2 * m.to);
        }
      }
      std::map<std::vector<int32_t>, int32_t> by_targets;  // bytes with the same targets share a closure
      for (int b = 0; b < 256; ++b) {
        if (targets[size_t(b)].empty()) continue;
        auto& t = targets[size_t(b)];
        std::sort(t.begin(), t.end());
        t.erase(std::unique(t.begin(), t.end()), t.end());
        auto known = by_targets.find(t);
        if (known == by_targets.end()) {
          auto subset = closure(t, false);
          auto [it, added] = index.try_emplace(subset, int32_t(out.size()));
          if (added) {
            if (out.size() >= max_automaton_states)
              return error{"the pattern needs more than " + std::to_string(max_automaton_states) + " automaton states"};
            out.add_state(accepts(subset));
            subsets.push_back(std::move(subset));
          }
          known = by_targets.emplace(t, it->second).first;
        }
        out.set_next(int32_t(i), uint8_t(b), known->second);
      }
      if (work_ > max_subset_work) return error{"the pattern's automaton takes too long to build"};
    }
    return out.trimmed();
  }

 private:
  bool accepts(const std::vector<int32_t>& subset) const {
    return std::binary_search(subset.begin(), subset.end(), 2 * accept_) ||
           std::binary_search(subset.begin(), subset.end(), 2 * accept_ + 1);
  }

  std::vector<int32_t> closure(const std::vector<int32_t>& seeds, bool at_start) {
    // Items seen in this closure carry its stamp: nothing to clear between closures.
    std::vector<int32_t> todo, out;
    seen_.resize(2 * states_.size(), 0);
    ++stamp_;
    auto push = [&](int32_t item) {
      if (seen_[size_t(item)] != stamp_) {
        seen_[size_t(item)] = stamp_;
        todo.push_back(item);
      }
    };
    for (int32_t s : seeds) push(s);
    while (!todo.empty()) {
      int32_t item = todo.back();
      todo.pop_back();
      out.push_back(item);
      const int32_t end_only = item & 1;
      auto& s = states_[size_t(item / 2)];
      work_ += s.empty.size() + s.at_start.size() + s.at_end.size() + 1;
      for (int32_t t : s.empty) push(2 * t + end_only);
      if (at_start) {
        for (int32_t t : s.at_start) push(2 * t + end_only);
      }
      for (int32_t t : s.at_end) push(2 * t + 1);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  std::vector<nfa::state>& states_;
  int32_t accept_;
  std::vector<uint32_t> seen_;
  uint32_t stamp_ = 0;
  size_t work_ = 0;
};

result<byte_automaton> compile(const regex_node& tree, bool searched) {
  nfa n;
  int32_t start = n.add(), accept = n.add();
  auto body = n.build(tree);
  auto& states = n.states();
  if (!n.overflow()) {
    states[size_t(start)].empty.push_back(body.in);
    states[size_t(body.out)].empty.push_back(accept);
    if (searched) {
      n.any_character_loop(start);
      n.any_character_loop(accept);
    }
  }
  if (n.overflow()) return error{"the pattern's automaton passes " + std::to_string(max_nfa_states) + " states"};
  auto dfa = determinizer(n, accept).run(start);
  if (!dfa) return dfa.err();
  if (dfa->empty()) return error{"a pattern that no string matches"};
  return dfa;
}

}  // namespace

std::vector<byte_sequence> utf8_sequences(const code_point_ranges& ranges) {
  std::vector<byte_sequence> out;
  for (auto [lo, hi] : ranges) split_range(lo, hi, out);
  return out;
}

result<byte_automaton> whole_match_automaton(const regex_node& tree) { return compile(tree, false); }

result<byte_automaton> regex_automaton(std::string_view pattern) {
  auto tree = parse_regex(pattern);
  if (!tree) return tree.err();
  return compile(*tree, true);
}

}  // namespace troupe
