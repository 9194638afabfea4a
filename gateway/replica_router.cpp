#include "gateway/replica_router.hpp"

#include <algorithm>
#include <cmath>

namespace troupe {
namespace {

// Prompt tokens that decide a prefix_aware route: the first few KV blocks' worth.
constexpr size_t routed_prefix_tokens = 64;

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t hash_bytes(const void* data, size_t size, uint64_t seed) {  // FNV-1a, mixed
  uint64_t h = 0xcbf29ce484222325ull ^ seed;
  for (size_t i = 0; i < size; ++i) h = (h ^ static_cast<const uint8_t*>(data)[i]) * 0x100000001b3ull;
  return mix(h);
}

}  // namespace

result<routing_policy> routing_policy_named(std::string_view name) {
  if (name == "round_robin") return routing_policy::round_robin;
  if (name == "least_load") return routing_policy::least_load;
  if (name == "prefix_aware") return routing_policy::prefix_aware;
  return error{"routing must be round_robin, least_load or prefix_aware, not " + std::string(name)};
}

replica_router::replica_router(std::vector<std::string> names, std::vector<double> weights, routing_policy policy,
                               circuit_options circuit)
    : policy_(policy), circuit_(circuit) {
  for (size_t i = 0; i < names.size(); ++i) {
    replica r;
    r.name = std::move(names[i]);
    r.from = r.to = i < weights.size() ? weights[i] : 1.0;
    replicas_.push_back(std::move(r));
  }
}

double replica_router::weight(const replica& r, clock::time_point now) const {
  if (now >= ramp_end_ || ramp_end_ <= ramp_start_) return r.to;
  const double t = std::chrono::duration<double>(now - ramp_start_) / std::chrono::duration<double>(ramp_end_ - ramp_start_);
  return r.from + (r.to - r.from) * t;
}

bool replica_router::routable(const replica& r, clock::time_point now) const {
  if ((!r.healthy && !unhealthy_allowed_) || weight(r, now) <= 0) return false;
  if (r.consecutive_failures < circuit_.failures_to_open) return true;  // closed
  return now >= r.open_until && !r.trial;                                // half-open: one trial at a time
}

// Weighted rendezvous hashing: each replica scores weight / -ln(u), u uniform from the key
// and its name; the highest wins.
std::optional<size_t> replica_router::rendezvous(uint64_t key, clock::time_point now) const {
  std::optional<size_t> best;
  double best_score = 0;
  for (size_t i = 0; i < replicas_.size(); ++i) {
    const replica& r = replicas_[i];
    if (!routable(r, now)) continue;
    const uint64_t h = hash_bytes(r.name.data(), r.name.size(), key);
    const double u = (double(h >> 11) + 0.5) * 0x1.0p-53;
    const double score = weight(r, now) / -std::log(u);
    if (!best || score > best_score) best = i, best_score = score;
  }
  return best;
}

std::optional<size_t> replica_router::pick(std::string_view session, const std::vector<int>& prompt,
                                           clock::time_point now) {
  auto chosen = choose(session, prompt, now);
  if (!chosen) {  // no healthy replica: the unhealthy ones queue it
    unhealthy_allowed_ = true;
    chosen = choose(session, prompt, now);
    unhealthy_allowed_ = false;
  }
  if (!chosen) return std::nullopt;
  replica& r = replicas_[*chosen];
  ++r.in_flight;
  if (r.consecutive_failures >= circuit_.failures_to_open) r.trial = true;
  return chosen;
}

std::optional<size_t> replica_router::choose(std::string_view session, const std::vector<int>& prompt,
                                             clock::time_point now) {
  std::optional<size_t> chosen;
  if (!session.empty()) {
    chosen = rendezvous(hash_bytes(session.data(), session.size(), 1), now);
  } else if (policy_ == routing_policy::prefix_aware) {
    const size_t n = std::min(prompt.size(), routed_prefix_tokens);
    chosen = rendezvous(hash_bytes(prompt.data(), n * sizeof(int), 2), now);
  } else if (policy_ == routing_policy::least_load) {
    double best = 0;
    for (size_t i = 0; i < replicas_.size(); ++i) {
      if (!routable(replicas_[i], now)) continue;
      const double load = (replicas_[i].in_flight + 1) / weight(replicas_[i], now);
      if (!chosen || load < best) chosen = i, best = load;
    }
  } else {  // smooth weighted round robin (nginx's): exact shares, evenly interleaved
    double total = 0;
    for (size_t i = 0; i < replicas_.size(); ++i) {
      replica& r = replicas_[i];
      if (!routable(r, now)) continue;
      r.current += weight(r, now);
      total += weight(r, now);
      if (!chosen || r.current > replicas_[*chosen].current) chosen = i;
    }
    if (chosen) replicas_[*chosen].current -= total;
  }
  return chosen;
}

void replica_router::finished(size_t i, bool failed, clock::time_point now) {
  replica& r = replicas_[i];
  r.in_flight = std::max(0, r.in_flight - 1);
  r.trial = false;
  if (!failed) {
    r.consecutive_failures = 0;
    return;
  }
  if (++r.consecutive_failures >= circuit_.failures_to_open) r.open_until = now + circuit_.cool_down;
}

status replica_router::set_weights(const std::map<std::string, double>& weights, std::chrono::milliseconds ramp,
                                   clock::time_point now) {
  std::vector<double> target;
  for (const replica& r : replicas_) target.push_back(r.to);
  for (const auto& [name, w] : weights) {
    auto it = std::find_if(replicas_.begin(), replicas_.end(), [&](const replica& r) { return r.name == name; });
    if (it == replicas_.end()) return error{"no replica " + name};
    if (!(w >= 0) || !std::isfinite(w)) return error{"replica " + name + ": a weight must be a number 0 or more"};
    target[size_t(it - replicas_.begin())] = w;
  }
  if (std::all_of(target.begin(), target.end(), [](double w) { return w == 0; }))
    return error{"at least one replica needs a weight above 0"};
  for (size_t i = 0; i < replicas_.size(); ++i) {
    replicas_[i].from = weight(replicas_[i], now);
    replicas_[i].to = target[i];
  }
  ramp_start_ = now;
  ramp_end_ = now + ramp;
  return ok();
}

std::vector<replica_router::replica_view> replica_router::view(clock::time_point now) const {
  std::vector<replica_view> out;
  for (const replica& r : replicas_)
    out.push_back({r.name, weight(r, now), r.in_flight, r.healthy,
                   r.consecutive_failures >= circuit_.failures_to_open && now < r.open_until});
  return out;
}

}  // namespace troupe
