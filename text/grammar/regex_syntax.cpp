#include "text/grammar/regex_syntax.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

#include "base/utf8.hpp"

namespace troupe {

namespace {

constexpr uint32_t max_code_point = 0x10ffff;
constexpr int max_count_value = 100000;  // {m,n} past this is refused at once

const code_point_ranges digit_class = {{'0', '9'}};
const code_point_ranges word_class = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// ECMAScript's WhiteSpace and LineTerminator.
const code_point_ranges space_class = {{0x09, 0x0d},     {0x20, 0x20},     {0xa0, 0xa0},     {0x1680, 0x1680},
                                       {0x2000, 0x200a}, {0x2028, 0x2029}, {0x202f, 0x202f}, {0x205f, 0x205f},
                                       {0x3000, 0x3000}, {0xfeff, 0xfeff}};
const code_point_ranges line_terminators = {{0x0a, 0x0a}, {0x0d, 0x0d}, {0x2028, 0x2029}};

regex_node characters(code_point_ranges ranges) {
  regex_node n;
  n.type = regex_node::kind::characters;
  n.characters = normalized(std::move(ranges));
  return n;
}

class regex_parser {
 public:
  explicit regex_parser(std::string_view pattern) : pattern_(pattern) {}

  result<regex_node> parse() {
    if (size_t bad = find_invalid_utf8(pattern_); bad != std::string_view::npos)
      return error{"a pattern that is not UTF-8 at offset " + std::to_string(bad)};
    auto root = disjunction(0);
    if (!failure_.empty()) return error{failure_};
    if (at_ < pattern_.size()) return error{"an unmatched ')' at offset " + std::to_string(at_)};
    return root;
  }

 private:
  bool done() const { return at_ >= pattern_.size() || !failure_.empty(); }
  char peek() const { return pattern_[at_]; }
  bool next_is(std::string_view s) const { return pattern_.substr(at_).starts_with(s); }

  void fail(const std::string& what, size_t offset) {
    if (failure_.empty()) failure_ = what + " at offset " + std::to_string(offset);
  }
  void refuse(const std::string& construct, size_t offset) {
    fail("the pattern uses " + construct + ", which no grammar can enforce,", offset);
  }

  // One code point of the pattern's own text (checked to be UTF-8 before parsing).
  uint32_t take_code_point() { return uint32_t(next_code_point(pattern_, at_)); }

  regex_node disjunction(int depth) {
    if (depth > max_regex_nesting) {
      fail("groups nested more than " + std::to_string(max_regex_nesting) + " deep", at_);
      return {};
    }
    regex_node alternation;
    alternation.type = regex_node::kind::alternation;
    alternation.children.push_back(alternative(depth));
    while (!done() && peek() == '|') {
      ++at_;
      alternation.children.push_back(alternative(depth));
    }
    if (alternation.children.size() == 1) return std::move(alternation.children[0]);
    return alternation;
  }

  regex_node alternative(int depth) {
    regex_node sequence;
    while (!done() && peek() != '|' && peek() != ')') {
      size_t start = at_;
      auto atom_node = atom(depth);
      if (!failure_.empty()) break;
      quantified(std::move(atom_node), start, sequence);
    }
    return sequence;
  }

  // The atom, with the quantifier that may follow it, appended to `sequence`.
  void quantified(regex_node atom_node, size_t start, regex_node& sequence) {
    int min_count = 1, max_count = 1;
    if (done()) {
      sequence.children.push_back(std::move(atom_node));
      return;
    }
    size_t quantifier_at = at_;
    char c = peek();
    if (c == '*')
      min_count = 0, max_count = -1, ++at_;
    else if (c == '+')
      min_count = 1, max_count = -1, ++at_;
    else if (c == '?')
      min_count = 0, max_count = 1, ++at_;
    else if (c == '{' && !braces(min_count, max_count)) {
      sequence.children.push_back(std::move(atom_node));
      return;
    }
    if (at_ == quantifier_at) {
      sequence.children.push_back(std::move(atom_node));
      return;
    }
    if (!done() && peek() == '?') ++at_;  // lazy: the same language
    if (atom_node.type == regex_node::kind::line_start || atom_node.type == regex_node::kind::line_end) {
      fail("a quantified anchor", start);
      return;
    }
    if (max_count >= 0 && max_count < min_count) {
      fail("a quantifier whose maximum is below its minimum", quantifier_at);
      return;
    }
    regex_node repetition;
    repetition.type = regex_node::kind::repetition;
    repetition.min_count = min_count;
    repetition.max_count = max_count;
    repetition.children.push_back(std::move(atom_node));
    sequence.children.push_back(std::move(repetition));
  }

  // {n}, {n,} or {n,m} at at_: true and moved past it, or false with at_ unchanged (then
  // '{' is a literal, as ECMAScript reads it outside Unicode mode).
  bool braces(int& min_count, int& max_count) {
    size_t p = at_ + 1;
    auto number = [&](int& value) {
      size_t from = p;
      long long v = 0;
      while (p < pattern_.size() && pattern_[p] >= '0' && pattern_[p] <= '9') {
        v = std::min<long long>(v * 10 + (pattern_[p] - '0'), max_count_value + 1LL);
        ++p;
      }
      value = int(v);
      return p > from;
    };
    if (!number(min_count)) return false;
    max_count = min_count;
    if (p < pattern_.size() && pattern_[p] == ',') {
      ++p;
      if (!number(max_count)) max_count = -1;
    }
    if (p >= pattern_.size() || pattern_[p] != '}') return false;
    if (min_count > max_count_value || max_count > max_count_value) {
      fail("a quantifier above " + std::to_string(max_count_value), at_);
    }
    at_ = p + 1;
    return true;
  }

  regex_node atom(int depth) {
    size_t start = at_;
    char c = peek();
    switch (c) {
      case '^':
        ++at_;
        return anchor(regex_node::kind::line_start);
      case '$':
        ++at_;
        return anchor(regex_node::kind::line_end);
      case '.':
        ++at_;
        return characters(complement(line_terminators));
      case '[':
        return character_class();
      case '\\':
        return escape_atom();
      case '*':
      case '+':
      case '?':
        fail("a quantifier with nothing to repeat", start);
        return {};
      case '{': {
        int min_count = 0, max_count = 0;
        if (braces(min_count, max_count)) {
          fail("a quantifier with nothing to repeat", start);
          return {};
        }
        ++at_;
        return characters({{'{', '{'}});
      }
      case '(':
        return group(depth);
      default: {
        uint32_t cp = take_code_point();
        return characters({{cp, cp}});
      }
    }
  }

  static regex_node anchor(regex_node::kind k) {
    regex_node n;
    n.type = k;
    return n;
  }

  regex_node group(int depth) {
    size_t start = at_;
    ++at_;
    if (next_is("?=")) return refuse("a lookahead (?=...)", start), regex_node{};
    if (next_is("?!")) return refuse("a negative lookahead (?!...)", start), regex_node{};
    if (next_is("?<=")) return refuse("a lookbehind (?<=...)", start), regex_node{};
    if (next_is("?<!")) return refuse("a negative lookbehind (?<!...)", start), regex_node{};
    if (next_is("?:")) {
      at_ += 2;
    } else if (next_is("?<")) {
      size_t close = pattern_.find('>', at_);
      if (close == std::string_view::npos) return fail("a group name without '>'", start), regex_node{};
      at_ = close + 1;
    } else if (next_is("?")) {
      return fail("an unknown group '(?'", start), regex_node{};
    }
    auto inner = disjunction(depth + 1);
    if (done() || peek() != ')') return fail("a group without ')'", start), regex_node{};
    ++at_;
    return inner;
  }

  regex_node escape_atom() {
    size_t start = at_;
    ++at_;
    if (done()) return fail("a pattern that ends in '\\'", start), regex_node{};
    char c = peek();
    if (c == 'b') return refuse("a word boundary (\\b)", start), regex_node{};
    if (c == 'B') return refuse("a non-boundary (\\B)", start), regex_node{};
    if (c >= '1' && c <= '9') return refuse("a backreference (\\" + std::string(1, c) + ")", start), regex_node{};
    if (c == 'k' && next_is("k<")) return refuse("a named backreference (\\k<...>)", start), regex_node{};
    auto set = escaped_class(start);
    if (!failure_.empty()) return {};
    return characters(std::move(set));
  }

  // The characters of the escape whose backslash is at `start` (at_ just past it), in or
  // outside a class.
  code_point_ranges escaped_class(size_t start, bool in_class = false) {
    char c = peek();
    ++at_;
    switch (c) {
      case 'd':
        return digit_class;
      case 'D':
        return complement(digit_class);
      case 'w':
        return word_class;
      case 'W':
        return complement(word_class);
      case 's':
        return space_class;
      case 'S':
        return complement(space_class);
      case 'p':
      case 'P':
        refuse("a Unicode property escape (\\" + std::string(1, c) + "{...})", start);
        return {};
      default:
        break;
    }
    --at_;
    auto cp = escaped_character(start, in_class);
    if (!cp) return {};
    return {{*cp, *cp}};
  }

  std::optional<uint32_t> hex_digits(size_t count) {
    uint32_t v = 0;
    for (size_t i = 0; i < count; ++i) {
      if (done()) return std::nullopt;
      char h = peek();
      int d = h >= '0' && h <= '9'   ? h - '0'
              : h >= 'a' && h <= 'f' ? h - 'a' + 10
              : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                     : -1;
      if (d < 0) return std::nullopt;
      v = v * 16 + uint32_t(d);
      ++at_;
    }
    return v;
  }

  // One code point written as an escape (at_ just past the backslash).
  std::optional<uint32_t> escaped_character(size_t start, bool in_class) {
    char c = peek();
    ++at_;
    switch (c) {
      case 't':
        return 0x09;
      case 'n':
        return 0x0a;
      case 'v':
        return 0x0b;
      case 'f':
        return 0x0c;
      case 'r':
        return 0x0d;
      case 'b':
        if (in_class) return 0x08;
        break;
      case '0':
        if (!done() && peek() >= '0' && peek() <= '9') break;
        return 0;
      case 'c':
        if (!done() && ((peek() >= 'a' && peek() <= 'z') || (peek() >= 'A' && peek() <= 'Z')))
          return uint32_t(pattern_[at_++]) % 32;
        break;
      case 'x': {
        auto v = hex_digits(2);
        if (v) return v;
        break;
      }
      case 'u':
        return unicode_escape(start);
      default:
        // Syntax characters and other punctuation stand for themselves; letters and
        // digits with no meaning are errors in Unicode mode.
        if ((unsigned char)c >= 0x80) {
          --at_;
          return take_code_point();
        }
        if (!std::isalnum((unsigned char)c)) return uint32_t((unsigned char)c);
        break;
    }
    fail("an unknown escape '\\" + std::string(1, c) + "'", start);
    return std::nullopt;
  }

  std::optional<uint32_t> unicode_escape(size_t start) {
    if (!done() && peek() == '{') {
      ++at_;
      uint32_t v = 0;
      size_t digits = 0;
      while (!done() && peek() != '}') {
        auto d = hex_digits(1);
        if (!d || ++digits > 6) return fail("a malformed \\u{...} escape", start), std::nullopt;
        v = v * 16 + *d;
      }
      if (done() || digits == 0 || v > max_code_point) return fail("a malformed \\u{...} escape", start), std::nullopt;
      ++at_;
      return v;
    }
    auto high = hex_digits(4);
    if (!high) return fail("a malformed \\u escape", start), std::nullopt;
    if (*high >= 0xd800 && *high <= 0xdbff && next_is("\\u")) {
      size_t back = at_;
      at_ += 2;
      auto low = hex_digits(4);
      if (low && *low >= 0xdc00 && *low <= 0xdfff) return 0x10000 + ((*high - 0xd800) << 10) + (*low - 0xdc00);
      at_ = back;
    }
    if (*high >= 0xd800 && *high <= 0xdfff) return fail("a lone surrogate escape", start), std::nullopt;
    return high;
  }

  regex_node character_class() {
    size_t start = at_;
    ++at_;
    bool negated = !done() && peek() == '^';
    if (negated) ++at_;
    code_point_ranges set;
    while (true) {
      if (done()) return fail("a class without ']'", start), regex_node{};
      if (peek() == ']') break;
      auto low = class_atom();
      if (!failure_.empty()) return {};
      if (!done() && peek() == '-' && at_ + 1 < pattern_.size() && pattern_[at_ + 1] != ']') {
        size_t dash = at_;
        ++at_;
        auto high = class_atom();
        if (!failure_.empty()) return {};
        if (low.size() != 1 || high.size() != 1 || low[0].first != low[0].second || high[0].first != high[0].second)
          return fail("a class range between sets", dash), regex_node{};
        if (high[0].first < low[0].first) return fail("a class range out of order", dash), regex_node{};
        set.push_back({low[0].first, high[0].first});
        continue;
      }
      set.insert(set.end(), low.begin(), low.end());
    }
    ++at_;
    set = normalized(std::move(set));
    return characters(negated ? complement(set) : set);
  }

  code_point_ranges class_atom() {
    size_t start = at_;
    if (peek() != '\\') {
      uint32_t cp = take_code_point();
      return {{cp, cp}};
    }
    ++at_;
    if (done()) return fail("a pattern that ends in '\\'", start), code_point_ranges{};
    char c = peek();
    if (c >= '1' && c <= '9')
      return refuse("a backreference (\\" + std::string(1, c) + ")", start), code_point_ranges{};
    if (c == '-') return ++at_, code_point_ranges{{'-', '-'}};
    return escaped_class(start, true);
  }

  std::string_view pattern_;
  size_t at_ = 0;
  std::string failure_;
};

}  // namespace

code_point_ranges normalized(code_point_ranges ranges) {
  code_point_ranges cut;
  for (auto [lo, hi] : ranges) {
    if (lo > hi || lo > max_code_point) continue;
    hi = std::min(hi, max_code_point);
    if (lo < 0xd800 && hi > 0xdfff) {
      cut.push_back({lo, 0xd7ff});
      cut.push_back({0xe000, hi});
    } else if (lo >= 0xd800 && hi <= 0xdfff) {
      continue;
    } else if (lo < 0xd800 && hi >= 0xd800) {
      cut.push_back({lo, 0xd7ff});
    } else if (lo <= 0xdfff && hi > 0xdfff) {
      cut.push_back({0xe000, hi});
    } else {
      cut.push_back({lo, hi});
    }
  }
  std::sort(cut.begin(), cut.end());
  code_point_ranges merged;
  for (auto r : cut) {
    if (!merged.empty() && r.first <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  return merged;
}

code_point_ranges complement(const code_point_ranges& ranges) {
  code_point_ranges sorted = normalized(ranges), out;
  uint32_t from = 0;
  for (auto [lo, hi] : sorted) {
    if (lo > from) out.push_back({from, lo - 1});
    from = hi + 1;
  }
  if (from <= max_code_point) out.push_back({from, max_code_point});
  return normalized(std::move(out));
}

result<regex_node> parse_regex(std::string_view pattern) { return regex_parser(pattern).parse(); }

}  // namespace troupe
