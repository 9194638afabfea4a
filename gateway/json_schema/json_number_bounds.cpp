#include "gateway/json_schema/json_number_bounds.hpp"

#include <optional>
#include <string>
#include <vector>

#include "text/grammar/regex_automaton.hpp"

namespace troupe {

using json = nlohmann::ordered_json;

namespace {

constexpr size_t max_bound_digits = 40;
constexpr int max_multiple_states = 4096;

// A decimal written as sign, integer digits (no leading zeros; "0" for none) and
// fraction digits (no trailing zeros).
struct decimal {
  bool negative = false;
  std::string whole = "0", fraction;
  bool zero() const { return whole == "0" && fraction.empty(); }
};

std::optional<decimal> parse_decimal(const json& v) {
  if (!v.is_number()) return std::nullopt;
  const std::string text = v.dump();  // integers exactly, doubles in their shortest form
  decimal d;
  size_t i = 0;
  if (text[i] == '-') d.negative = true, ++i;
  std::string digits;
  long point = -1;
  for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
    if (text[i] == '.')
      point = long(digits.size());
    else
      digits += text[i];
  }
  if (point < 0) point = long(digits.size());
  if (i < text.size()) point += std::stol(text.substr(i + 1));
  if (point < 0) digits.insert(0, size_t(-point), '0'), point = 0;
  if (size_t(point) > digits.size()) digits.append(size_t(point) - digits.size(), '0');
  if (digits.size() > max_bound_digits) return std::nullopt;
  d.whole = digits.substr(0, size_t(point));
  d.fraction = digits.substr(size_t(point));
  while (d.whole.size() > 1 && d.whole[0] == '0') d.whole.erase(0, 1);
  if (d.whole.empty()) d.whole = "0";
  while (!d.fraction.empty() && d.fraction.back() == '0') d.fraction.pop_back();
  if (d.zero()) d.negative = false;
  return d;
}

std::string digit_range(int lo, int hi) { return "[" + std::to_string(lo) + "-" + std::to_string(hi) + "]"; }

// Alternatives, as a group; "" (matching nothing) when there are none.
std::string any_of(const std::vector<std::string>& alternatives) {
  std::string out;
  for (auto& a : alternatives) {
    if (a.empty()) continue;
    out += (out.empty() ? "" : "|") + a;
  }
  return out.empty() ? "" : "(?:" + out + ")";
}

// Naturals (no leading zeros) greater than n, and less than n.
std::string whole_greater(const std::string& n) {
  std::vector<std::string> alternatives{"[1-9][0-9]{" + std::to_string(n.size()) + ",}"};
  for (size_t k = 0; k < n.size(); ++k) {
    int d = n[k] - '0';
    if (d == 9) continue;
    alternatives.push_back(n.substr(0, k) + digit_range(d + 1, 9) + "[0-9]{" + std::to_string(n.size() - k - 1) + "}");
  }
  return any_of(alternatives);
}

std::string whole_less(const std::string& n) {
  std::vector<std::string> alternatives;
  if (n.size() >= 2) alternatives.push_back("0|[1-9][0-9]{0," + std::to_string(n.size() - 2) + "}");
  for (size_t k = 0; k < n.size(); ++k) {
    int d = n[k] - '0', lo = k == 0 && n.size() > 1 ? 1 : 0;
    if (d - 1 < lo) continue;
    alternatives.push_back(n.substr(0, k) + digit_range(lo, d - 1) + "[0-9]{" + std::to_string(n.size() - k - 1) + "}");
  }
  return any_of(alternatives);
}

const std::string any_fraction = "(?:\\.[0-9]+)?";

// Fractions (the '.' and digits, or nothing) compared with the digits f, as decimals.
std::string fraction_at_least(const std::string& f, bool strictly) {
  if (f.empty()) return strictly ? "\\.[0-9]*[1-9][0-9]*" : any_fraction;
  std::vector<std::string> alternatives;
  for (size_t k = 0; k < f.size(); ++k) {
    int d = f[k] - '0';
    if (d < 9) alternatives.push_back("\\." + f.substr(0, k) + digit_range(d + 1, 9) + "[0-9]*");
  }
  alternatives.push_back("\\." + f + (strictly ? "[0-9]*[1-9][0-9]*" : "[0-9]*"));
  return any_of(alternatives);
}

std::string fraction_at_most(const std::string& f, bool strictly) {
  if (f.empty()) return strictly ? "" : "(?:\\.0+)?";
  std::vector<std::string> alternatives{"(?:)"};
  for (size_t k = 0; k < f.size(); ++k) {
    int d = f[k] - '0';
    if (d > 0) alternatives.push_back("\\." + f.substr(0, k) + digit_range(0, d - 1) + "[0-9]*");
  }
  for (size_t j = 1; j <= f.size(); ++j) {
    if (j == f.size() && strictly) break;
    alternatives.push_back("\\." + f.substr(0, j) + "0*");
  }
  return any_of(alternatives);
}

std::string join_part(const std::string& whole, const std::string& fraction) {
  return whole.empty() || fraction.empty() ? "" : whole + fraction;
}

// Magnitudes (digits, point, digits) at least b (or above it, strictly), or at most it.
std::string magnitude_at_least(const decimal& b, bool strictly) {
  return any_of(
      {join_part(whole_greater(b.whole), any_fraction), join_part(b.whole, fraction_at_least(b.fraction, strictly))});
}
std::string magnitude_at_most(const decimal& b, bool strictly) {
  return any_of(
      {join_part(whole_less(b.whole), any_fraction), join_part(b.whole, fraction_at_most(b.fraction, strictly))});
}
const std::string any_magnitude = "[0-9]+" + any_fraction;

// Numbers x >= b (x > b strictly), then x <= b (x < b).
std::string lower_bound_pattern(const decimal& b, bool strictly) {
  if (!b.negative) return any_of({magnitude_at_least(b, strictly)});
  return any_of({any_magnitude, join_part("-", magnitude_at_most(b, strictly))});
}
std::string upper_bound_pattern(const decimal& b, bool strictly) {
  if (b.negative) return any_of({join_part("-", magnitude_at_least(b, strictly))});
  if (b.zero() && strictly) return any_of({join_part("-", magnitude_at_least(b, true))});
  return any_of({magnitude_at_most(b, strictly), "-" + any_magnitude});
}

// Numbers that are multiples of m: with m = k / 10^d, the digits N of a number with j <= d
// fraction digits are a multiple when N * 10^(d - j) is one of k.
result<byte_automaton> multiple_automaton(const decimal& m) {
  const std::string digits = m.whole + m.fraction;
  long long k = 0;
  for (char c : digits) k = k * 10 + (c - '0');
  const int d = int(m.fraction.size());
  if (k <= 0 || m.negative) return error{"multipleOf that is not a positive number"};
  if (k * (d + 2) > max_multiple_states)
    return error{"multipleOf needs more than " + std::to_string(max_multiple_states) + " automaton states"};
  auto power_mod = [&](int e) {
    long long p = 1 % k;
    for (int i = 0; i < e; ++i) p = p * 10 % k;
    return p;
  };
  byte_automaton a;
  const int32_t start = a.add_state(false), minus = a.add_state(false);
  const int32_t whole0 = int32_t(a.size());
  for (long long r = 0; r < k; ++r) a.add_state(r * power_mod(d) % k == 0);
  // fraction states, j = 0 (just after the point) .. d
  auto fraction_state = [&](int j, long long r) { return int32_t(whole0 + k + j * k + r); };
  for (int j = 0; j <= d && d > 0; ++j) {
    for (long long r = 0; r < k; ++r) a.add_state(j > 0 && r * power_mod(d - j) % k == 0);
  }
  a.set_next(start, '-', minus);
  for (int digit = 0; digit <= 9; ++digit) {
    a.set_next(start, uint8_t('0' + digit), int32_t(whole0 + digit % k));
    a.set_next(minus, uint8_t('0' + digit), int32_t(whole0 + digit % k));
  }
  for (long long r = 0; r < k; ++r) {
    for (int digit = 0; digit <= 9; ++digit)
      a.set_next(int32_t(whole0 + r), uint8_t('0' + digit), int32_t(whole0 + (r * 10 + digit) % k));
    if (d == 0) continue;
    a.set_next(int32_t(whole0 + r), '.', fraction_state(0, r));
    for (int j = 0; j < d; ++j) {
      for (int digit = 0; digit <= 9; ++digit)
        a.set_next(fraction_state(j, r), uint8_t('0' + digit), fraction_state(j + 1, (r * 10 + digit) % k));
    }
  }
  return a.trimmed();
}

result<byte_automaton> pattern_automaton(const std::string& pattern) {
  auto tree = parse_regex(pattern);
  if (!tree) return tree.err();
  return whole_match_automaton(*tree);
}

}  // namespace

bool has_number_bounds(const json& schema) {
  for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}) {
    if (schema.contains(key)) return true;
  }
  return false;
}

result<byte_automaton> bounded_number_automaton(const json& schema, bool integer) {
  auto shape = pattern_automaton(integer ? "-?(?:0|[1-9][0-9]{0,15})" : "-?(?:0|[1-9][0-9]{0,15})(?:\\.[0-9]{1,16})?");
  if (!shape) return shape.err();
  byte_automaton language = std::move(shape).value();
  auto narrow = [&](const byte_automaton& by) -> status {
    auto both = intersect(language, by);
    if (!both) return both.err();
    language = std::move(both).value();
    return ok();
  };
  // Draft 4 writes exclusiveMinimum: true beside minimum; later drafts give the bound.
  auto bound = [&](const char* key, const char* exclusive_key, bool lower) -> status {
    const bool exclusive =
        schema.contains(exclusive_key) && schema[exclusive_key].is_boolean() && schema[exclusive_key].get<bool>();
    for (const char* k : {key, exclusive_key}) {
      if (!schema.contains(k)) continue;
      const json& v = schema[k];
      if (k == exclusive_key && v.is_boolean()) continue;
      auto b = parse_decimal(v);
      if (!b) return error{std::string(k) + " that is not a number of at most 40 digits"};
      const bool strictly = k == exclusive_key || exclusive;
      std::string pattern = lower ? lower_bound_pattern(*b, strictly) : upper_bound_pattern(*b, strictly);
      if (pattern.empty()) return error{"bounds that no number meets"};
      auto a = pattern_automaton(pattern);
      if (!a) return error{std::string(k) + ": " + a.err().message};
      if (auto narrowed = narrow(*a); !narrowed) return narrowed;
    }
    return ok();
  };
  if (auto s = bound("minimum", "exclusiveMinimum", true); !s) return s.err();
  if (auto s = bound("maximum", "exclusiveMaximum", false); !s) return s.err();
  if (schema.contains("multipleOf")) {
    auto m = parse_decimal(schema["multipleOf"]);
    if (!m) return error{"multipleOf that is not a positive number"};
    auto multiples = multiple_automaton(*m);
    if (!multiples) return multiples.err();
    if (auto narrowed = narrow(*multiples); !narrowed) return narrowed.err();
  }
  if (language.empty()) return error{"bounds that no number meets"};
  return language;
}

}  // namespace troupe
