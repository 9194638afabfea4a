#include "gateway/metrics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/check.hpp"

namespace troupe::metrics {

namespace {

bool name_char(char c, bool first, bool colon_ok) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_ok && c == ':') ||
         (!first && c >= '0' && c <= '9');
}

bool valid_name(std::string_view s, bool colon_ok) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (!name_char(s[i], i == 0, colon_ok)) return false;
  return true;
}

void append_value(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
  }
}

// `escape_quote`: label values escape '"' too; HELP text does not.
void append_escaped(std::string& out, std::string_view s, bool escape_quote) {
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && escape_quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

void append_labels(std::string& out, const labels& l, const std::string* le = nullptr) {
  if (l.empty() && !le) return;
  out += '{';
  for (size_t i = 0; i < l.size(); ++i) {
    if (i > 0) out += ',';
    out.append(l[i].first).append("=\"");
    append_escaped(out, l[i].second, true);
    out += '"';
  }
  if (le) out.append(l.empty() ? "" : ",").append("le=\"").append(*le).append("\"");
  out += '}';
}

void append_sample(std::string& out, std::string_view name, const labels& l, double v,
                   const std::string* le = nullptr) {
  out.append(name);
  append_labels(out, l, le);
  out += ' ';
  append_value(out, v);
  out += '\n';
}

std::string value_text(double v) {
  std::string s;
  append_value(s, v);
  return s;
}

void render_series(std::string& out, const std::string& name, const labels& l, const counter& c) {
  append_sample(out, name, l, c.value());
}

void render_series(std::string& out, const std::string& name, const labels& l, const gauge& g) {
  append_sample(out, name, l, g.value());
}

void render_series(std::string& out, const std::string& name, const labels& l, const histogram& h) {
  histogram::snapshot s = h.read();
  for (size_t i = 0; i <= h.bounds().size(); ++i) {
    std::string le = i < h.bounds().size() ? value_text(h.bounds()[i]) : "+Inf";
    append_sample(out, name + "_bucket", l, double(s.cumulative[i]), &le);
  }
  append_sample(out, name + "_sum", l, s.sum);
  append_sample(out, name + "_count", l, double(s.cumulative.back()));
}

void check_bounds(const std::vector<double>& bounds) {
  for (size_t i = 0; i < bounds.size(); ++i) {
    TROUPE_CHECK(std::isfinite(bounds[i]), "histogram bound not finite");
    TROUPE_CHECK(i == 0 || bounds[i - 1] < bounds[i], "histogram bounds not increasing");
  }
}

}  // namespace

void counter::inc(double by) {
  TROUPE_CHECK(by >= 0, "a counter only goes up");
  value_.fetch_add(by, std::memory_order_relaxed);
}

histogram::histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  check_bounds(bounds_);
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i] = 0;
}

void histogram::observe(double v) {
  size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

histogram::snapshot histogram::read() const {
  snapshot s{std::vector<uint64_t>(bounds_.size() + 1), sum_.load(std::memory_order_relaxed)};
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    total += counts_[i].load(std::memory_order_relaxed);
    s.cumulative[i] = total;
  }
  return s;
}

family_base::family_base(std::string name, std::string help, std::string_view type)
    : name_(std::move(name)), help_(std::move(help)), type_(type) {
  TROUPE_CHECK(valid_name(name_, true), "metric name outside [a-zA-Z_:][a-zA-Z0-9_:]*");
}

void family_base::render(std::string& out) const {
  if (empty()) return;
  out.append("# HELP ").append(name_).append(" ");
  append_escaped(out, help_, false);
  out.append("\n# TYPE ").append(name_).append(" ").append(type_).append("\n");
  render_samples(out);
}

template <class Metric>
family<Metric>::family(std::string name, std::string help, std::string_view type, std::vector<double> bounds)
    : family_base(std::move(name), std::move(help), type), bounds_(std::move(bounds)) {}

template <class Metric>
Metric& family<Metric>::add(labels l) {
  std::sort(l.begin(), l.end());
  for (size_t i = 0; i < l.size(); ++i) {
    const std::string& n = l[i].first;
    TROUPE_CHECK(valid_name(n, false) && !n.starts_with("__"), "label name outside [a-zA-Z_][a-zA-Z0-9_]*");
    TROUPE_CHECK(i == 0 || l[i - 1].first != n, "label name given twice");
    constexpr bool is_histogram = std::is_same_v<Metric, histogram>;
    TROUPE_CHECK(!is_histogram || n != "le", "\"le\" is the histogram's own label");
  }
  std::lock_guard lock(mutex_);
  for (auto& [have, metric] : series_)
    if (have == l) return *metric;
  if constexpr (std::is_same_v<Metric, histogram>) {
    series_.emplace_back(std::move(l), std::make_unique<histogram>(bounds_));
  } else {
    series_.emplace_back(std::move(l), std::make_unique<Metric>());
  }
  return *series_.back().second;
}

template <class Metric>
void family<Metric>::remove(labels l) {
  std::sort(l.begin(), l.end());
  remove_if([&](const labels& have) { return have == l; });
}

template <class Metric>
void family<Metric>::remove_if(const std::function<bool(const labels&)>& match) {
  std::lock_guard lock(mutex_);
  std::erase_if(series_, [&](const auto& s) { return match(s.first); });
}

template <class Metric>
bool family<Metric>::empty() const {
  std::lock_guard lock(mutex_);
  return series_.empty();
}

template <class Metric>
void family<Metric>::render_samples(std::string& out) const {
  std::lock_guard lock(mutex_);
  for (const auto& [l, metric] : series_) render_series(out, name(), l, *metric);
}

template class family<counter>;
template class family<gauge>;
template class family<histogram>;

family<counter>& registry::add_counter(std::string name, std::string help) {
  TROUPE_CHECK(name.ends_with("_total"), "a counter's name ends in _total");
  return keep(std::make_unique<family<counter>>(std::move(name), std::move(help), "counter"));
}

family<gauge>& registry::add_gauge(std::string name, std::string help) {
  return keep(std::make_unique<family<gauge>>(std::move(name), std::move(help), "gauge"));
}

family<histogram>& registry::add_histogram(std::string name, std::string help, std::vector<double> bounds) {
  check_bounds(bounds);  // here, not at the first series
  return keep(std::make_unique<family<histogram>>(std::move(name), std::move(help), "histogram", std::move(bounds)));
}

std::string registry::render() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& f : families_) f->render(out);
  return out;
}

template <class Family>
Family& registry::keep(std::unique_ptr<Family> f) {
  std::lock_guard lock(mutex_);
  for (const auto& have : families_) TROUPE_CHECK(have->name() != f->name(), "metric name added twice");
  Family& kept = *f;
  families_.push_back(std::move(f));
  return kept;
}

}  // namespace troupe::metrics
