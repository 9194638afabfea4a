#pragma once
// A small Prometheus registry: counters, gauges and histograms, each family with any
// number of labelled series, rendered in the text exposition format 0.0.4. Updates are
// relaxed atomics, cheap enough for hot paths (keep the series reference; add() looks it
// up under a lock). Names are checked: a bad one is a bug, not a runtime condition.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace troupe::metrics {

// Label names and values, e.g. {{"status", "200"}}.
using labels = std::vector<std::pair<std::string, std::string>>;

inline constexpr std::string_view content_type = "text/plain; version=0.0.4; charset=utf-8";

class counter {
 public:
  void inc(double by = 1);  // by >= 0
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class gauge {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void inc(double by = 1) { value_.fetch_add(by, std::memory_order_relaxed); }
  void dec(double by = 1) { value_.fetch_sub(by, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class histogram {
 public:
  explicit histogram(std::vector<double> bounds);  // bucket upper bounds, increasing; +Inf implied
  void observe(double v);

  struct snapshot {
    std::vector<uint64_t> cumulative;  // per bound, then +Inf (the count)
    double sum;
  };
  snapshot read() const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bucket, the last above every bound
  std::atomic<double> sum_{0};
};

class family_base {
 public:
  family_base(std::string name, std::string help, std::string_view type);
  virtual ~family_base() = default;
  const std::string& name() const { return name_; }
  void render(std::string& out) const;  // nothing while the family has no series

 protected:
  virtual bool empty() const = 0;
  virtual void render_samples(std::string& out) const = 0;

 private:
  std::string name_, help_;
  std::string_view type_;
};

template <class Metric>
class family final : public family_base {
 public:
  family(std::string name, std::string help, std::string_view type, std::vector<double> bounds = {});
  // The series with these labels (in any order), made on first use; the reference stays
  // valid until the series is removed.
  Metric& add(labels l = {});
  // Drops the series with these labels (in any order), or every series `match` accepts:
  // what they measured is gone (a replica removed).
  void remove(labels l);
  void remove_if(const std::function<bool(const labels&)>& match);

 private:
  bool empty() const override;
  void render_samples(std::string& out) const override;

  std::vector<double> bounds_;  // histograms only
  mutable std::mutex mutex_;
  std::vector<std::pair<labels, std::unique_ptr<Metric>>> series_;
};

extern template class family<counter>;
extern template class family<gauge>;
extern template class family<histogram>;

class registry {
 public:
  // Names follow Prometheus conventions (promtool lint): a counter's ends in _total, a
  // unit is spelled out in the name (_seconds, _bytes). Each name is added once.
  family<counter>& add_counter(std::string name, std::string help);
  family<gauge>& add_gauge(std::string name, std::string help);
  family<histogram>& add_histogram(std::string name, std::string help, std::vector<double> bounds);

  // Families in the order they were added, series in the order they were first used.
  std::string render() const;

 private:
  template <class Family>
  Family& keep(std::unique_ptr<Family> f);

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<family_base>> families_;
};

}  // namespace troupe::metrics
