#include "cli/args.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace troupe::cli {

static bool is_flag(const std::string& s) { return s.rfind("--", 0) == 0; }

static bool among(const std::vector<std::string>& names, const std::string& flag) {
  return std::find(names.begin(), names.end(), flag) != names.end();
}

result<args> args::parse(int argc, char** argv, const std::vector<std::string>& switches,
                         const std::vector<std::string>& lists) {
  args a;
  for (int i = 0; i < argc; ++i) {
    std::string flag = argv[i];
    if (!is_flag(flag)) return error{"unexpected argument \"" + flag + "\""};
    if (among(switches, flag)) {
      a.values_[flag] = "";
      continue;
    }
    if (i + 1 >= argc) return error{"flag " + flag + " needs a value"};
    std::string value = argv[++i];
    while (among(lists, flag) && i + 1 < argc && !is_flag(argv[i + 1])) value += std::string(" ") + argv[++i];
    a.values_[flag] = value;
  }
  return a;
}

std::optional<std::string> args::take(const std::string& name) {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  std::string v = it->second;
  values_.erase(it);
  return v;
}

static result<int> to_int(const std::string& name, const std::string& text) {
  int v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size())
    return error{"flag " + name + " needs an integer, got \"" + text + "\""};
  return v;
}

result<int> args::take_int(const std::string& name, int fallback) {
  auto v = take(name);
  return v ? to_int(name, *v) : result<int>(fallback);
}

result<double> args::take_double(const std::string& name, double fallback) {
  auto v = take(name);
  if (!v) return fallback;
  double d = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), d);
  if (ec != std::errc() || end != v->data() + v->size() || std::isnan(d))
    return error{"flag " + name + " needs a number, got \"" + *v + "\""};
  return d;
}

result<std::vector<int>> args::take_int_list(const std::string& name) {
  std::vector<int> out;
  auto v = take(name);
  if (!v || v->empty()) return out;
  size_t start = 0;
  while (start <= v->size()) {
    size_t comma = v->find(',', start);
    if (comma == std::string::npos) comma = v->size();
    auto n = to_int(name, v->substr(start, comma - start));
    if (!n) return n.err();
    out.push_back(*n);
    start = comma + 1;
  }
  return out;
}

bool args::take_switch(const std::string& name) { return take(name).has_value(); }

status args::finish() const {
  if (values_.empty()) return ok();
  return error{"unknown flag " + values_.begin()->first};
}

}  // namespace troupe::cli
