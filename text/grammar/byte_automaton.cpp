#include "text/grammar/byte_automaton.hpp"

#include <map>
#include <utility>

namespace troupe {

int32_t byte_automaton::add_state(bool accepting) {
  next_.resize(next_.size() + 256, none);
  accepting_.push_back(accepting ? 1 : 0);
  return int32_t(accepting_.size() - 1);
}

void byte_automaton::set_next(int32_t state, uint8_t first, uint8_t last, int32_t to) {
  for (int b = first; b <= last; ++b) set_next(state, uint8_t(b), to);
}

bool byte_automaton::matches(std::string_view text) const {
  if (empty()) return false;
  int32_t state = 0;
  for (char c : text) {
    state = next(state, uint8_t(c));
    if (state == none) return false;
  }
  return accepting(state);
}

byte_automaton byte_automaton::trimmed() const {
  byte_automaton out;
  if (empty()) return out;
  const size_t n = size();
  std::vector<uint8_t> reached(n, 0), live(n, 0);
  std::vector<int32_t> todo{0};
  reached[0] = 1;
  while (!todo.empty()) {
    int32_t s = todo.back();
    todo.pop_back();
    for (int b = 0; b < 256; ++b) {
      int32_t t = next(s, uint8_t(b));
      if (t != none && !reached[size_t(t)]) {
        reached[size_t(t)] = 1;
        todo.push_back(t);
      }
    }
  }
  // Live: accepting, or a move into a live state. Found backwards over reversed moves.
  std::vector<std::vector<int32_t>> from(n);
  for (size_t s = 0; s < n; ++s) {
    if (!reached[s]) continue;
    for (int b = 0; b < 256; ++b) {
      int32_t t = next(int32_t(s), uint8_t(b));
      if (t != none && (from[size_t(t)].empty() || from[size_t(t)].back() != int32_t(s)))
        from[size_t(t)].push_back(int32_t(s));
    }
    if (accepting(int32_t(s))) {
      live[s] = 1;
      todo.push_back(int32_t(s));
    }
  }
  while (!todo.empty()) {
    int32_t t = todo.back();
    todo.pop_back();
    for (int32_t s : from[size_t(t)]) {
      if (!live[size_t(s)]) {
        live[size_t(s)] = 1;
        todo.push_back(s);
      }
    }
  }
  if (!live[0]) return out;
  std::vector<int32_t> renumbered(n, none);
  renumbered[0] = out.add_state(accepting(0));
  for (size_t s = 1; s < n; ++s) {
    if (reached[s] && live[s]) renumbered[s] = out.add_state(accepting(int32_t(s)));
  }
  for (size_t s = 0; s < n; ++s) {
    if (renumbered[s] == none) continue;
    for (int b = 0; b < 256; ++b) {
      int32_t t = next(int32_t(s), uint8_t(b));
      if (t != none && renumbered[size_t(t)] != none) out.set_next(renumbered[s], uint8_t(b), renumbered[size_t(t)]);
    }
  }
  return out;
}

result<byte_automaton> intersect(const byte_automaton& a, const byte_automaton& b, size_t max_states) {
  byte_automaton out;
  if (a.empty() || b.empty()) return out;
  std::map<std::pair<int32_t, int32_t>, int32_t> states;
  std::vector<std::pair<int32_t, int32_t>> pairs{{0, 0}};
  states[{0, 0}] = out.add_state(a.accepting(0) && b.accepting(0));
  for (size_t i = 0; i < pairs.size(); ++i) {
    auto [sa, sb] = pairs[i];
    for (int c = 0; c < 256; ++c) {
      int32_t ta = a.next(sa, uint8_t(c)), tb = b.next(sb, uint8_t(c));
      if (ta == byte_automaton::none || tb == byte_automaton::none) continue;
      auto [it, added] = states.try_emplace({ta, tb}, int32_t(out.size()));
      if (added) {
        if (out.size() >= max_states) return error{"more than " + std::to_string(max_states) + " automaton states"};
        out.add_state(a.accepting(ta) && b.accepting(tb));
        pairs.push_back({ta, tb});
      }
      out.set_next(int32_t(i), uint8_t(c), it->second);
    }
  }
  return out.trimmed();
}

byte_automaton complement(const byte_automaton& a) {
  byte_automaton out;
  const size_t n = a.size();
  for (size_t s = 0; s < n; ++s) out.add_state(!a.accepting(int32_t(s)));
  const int32_t sink = out.add_state(true);
  if (n == 0) {
    out.set_next(sink, 0, 255, sink);
    return out;
  }
  for (size_t s = 0; s <= n; ++s) {
    for (int b = 0; b < 256; ++b) {
      int32_t t = s < n ? a.next(int32_t(s), uint8_t(b)) : sink;
      out.set_next(int32_t(s), uint8_t(b), t == byte_automaton::none ? sink : t);
    }
  }
  return out;
}

byte_automaton character_count_automaton(int min_chars, int max_chars) {
  byte_automaton out;
  const int last = max_chars < 0 ? min_chars : max_chars;
  for (int count = 0; count <= last; ++count) out.add_state(count >= min_chars);
  for (int count = 0; count <= last; ++count) {
    out.set_next(count, 0x80, 0xbf, count);
    int32_t after = count < last ? count + 1 : max_chars < 0 ? count : byte_automaton::none;
    if (after == byte_automaton::none) continue;
    out.set_next(count, 0x00, 0x7f, after);
    out.set_next(count, 0xc0, 0xff, after);
  }
  return out;
}

}  // namespace troupe
