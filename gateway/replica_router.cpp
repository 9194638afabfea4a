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

std::string_view state_name(replica_state s) {
  switch (s) {
    case replica_state::off:
      return "off";
    case replica_state::starting:
      return "starting";
    case replica_state::serving:
      return "serving";
    case replica_state::draining:
      return "draining";
    case replica_state::stopping:
      return "stopping";
  }
  return "?";
}

result<replica_state> replica_state_named(std::string_view name) {
  for (auto s : {replica_state::off, replica_state::starting, replica_state::serving, replica_state::draining,
                 replica_state::stopping})
    if (state_name(s) == name) return s;
  return error{"no replica state " + std::string(name)};
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

std::optional<size_t> replica_router::index_of(std::string_view name) const {
  for (size_t i = 0; i < replicas_.size(); ++i)
    if (replicas_[i].name == name) return i;
  return std::nullopt;
}

double replica_router::weight(const replica& r, clock::time_point now) const {
  if (now >= r.ramp_end || r.ramp_end <= r.ramp_start) return r.to;
  const double t =
      std::chrono::duration<double>(now - r.ramp_start) / std::chrono::duration<double>(r.ramp_end - r.ramp_start);
  return r.from + (r.to - r.from) * t;
}

bool replica_router::routable(const replica& r, clock::time_point now) const {
  if (r.state != replica_state::serving) return false;
  if ((!r.healthy && !unhealthy_allowed_) || weight(r, now) <= 0) return false;
  if (r.consecutive_failures < circuit_.failures_to_open) return true;  // closed
  return now >= r.open_until && !r.trial;                               // half-open: one trial at a time
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
    std::vector<bool> members(replicas_.size());
    for (size_t i = 0; i < replicas_.size(); ++i) members[i] = routable(replicas_[i], now);
    if (std::find(members.begin(), members.end(), true) == members.end()) return std::nullopt;
    if (members != round_robin_members_) {
      for (replica& r : replicas_) r.current = 0;
      round_robin_members_ = std::move(members);
    }
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
    const auto at = index_of(name);
    if (!at) return error{"no replica " + name};
    if (replicas_[*at].state != replica_state::serving)
      return error{"replica " + name + " is " + std::string(state_name(replicas_[*at].state)) + ", not serving"};
    if (!(w >= 0) || !std::isfinite(w)) return error{"replica " + name + ": a weight must be a number 0 or more"};
    target[*at] = w;
  }
  bool some_traffic = false;
  for (size_t i = 0; i < replicas_.size(); ++i)
    some_traffic = some_traffic || (replicas_[i].state == replica_state::serving && target[i] > 0);
  if (!some_traffic) return error{"at least one serving replica needs a weight above 0"};
  for (size_t i = 0; i < replicas_.size(); ++i) {
    replica& r = replicas_[i];
    r.from = weight(r, now);
    r.to = target[i];
    r.ramp_start = now;
    r.ramp_end = now + ramp;
  }
  return ok();
}

status replica_router::begin_add(size_t i) {
  replica& r = replicas_[i];
  if (r.state != replica_state::off)
    return error{"replica " + r.name + " is already " + std::string(state_name(r.state))};
  r.state = replica_state::starting;
  return ok();
}

void replica_router::added(size_t i, double weight, std::chrono::milliseconds ramp, clock::time_point now) {
  replica& r = replicas_[i];
  r.state = replica_state::serving;
  r.from = 0;
  r.to = weight;
  r.ramp_start = now;
  r.ramp_end = now + ramp;
}

status replica_router::begin_remove(size_t i, clock::time_point now) {
  replica& r = replicas_[i];
  if (r.state != replica_state::serving)
    return error{"replica " + r.name + " is " + std::string(state_name(r.state)) + ", not serving"};
  bool others = false;
  for (size_t j = 0; j < replicas_.size(); ++j)
    others = others || (j != i && replicas_[j].state == replica_state::serving && replicas_[j].to > 0);
  if (!others) return error{"replica " + r.name + " is the last serving replica with a weight above 0"};
  r.state = replica_state::draining;
  r.from = r.to = 0;
  r.ramp_start = r.ramp_end = now;
  return ok();
}

void replica_router::mark(size_t i, replica_state s) {
  replica& r = replicas_[i];
  r.state = s;
  if (s != replica_state::off) return;
  r.in_flight = 0;
  r.consecutive_failures = 0;
  r.trial = false;
  r.current = 0;
}

std::vector<replica_router::replica_view> replica_router::view(clock::time_point now) const {
  std::vector<replica_view> out;
  for (const replica& r : replicas_)
    if (r.state != replica_state::off)
      out.push_back({r.name, weight(r, now), r.in_flight, r.healthy,
                     r.consecutive_failures >= circuit_.failures_to_open && now < r.open_until, r.state});
  return out;
}

}  // namespace troupe
