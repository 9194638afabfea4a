// What the gateway says about the server and does to its replicas: /health, /metrics,
// /admin/status, /admin/traffic, /admin/replicas, and the lifecycle of a replica added or
// removed at runtime (starting, serving, draining, stopping, off).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string_view>

#include "actors/error_message.hpp"
#include "actors/gateway_handlers.hpp"
#include "gateway/admin/admin_replicas_json.hpp"
#include "gateway/admin/admin_status_json.hpp"
#include "gateway/admin/admin_traffic_json.hpp"

namespace troupe::gateway_handlers {
namespace {

// A removed replica has been stopped (or failed to): it leaves routing, and its series
// leave /metrics.
void replica_stopped(self_ptr self, size_t r, const std::string& failure) {
  auto& st = self->state;
  st.router->mark(r, replica_state::off);
  st.replicas[r].scheduler = nullptr;
  st.replica_errors[r] = failure;
  const metrics::labels replica{{"replica", st.replicas[r].name}};
  auto& m = *st.metrics;
  for (auto* f : {&m.replica_weight, &m.replica_in_flight, &m.replica_routable}) f->remove(replica);
  m.replica_requests.remove(replica);
  auto of_replica = [&](const metrics::labels& l) {
    return std::any_of(l.begin(), l.end(), [&](const auto& kv) {
      return kv.first == "component" && kv.second.rfind(st.replicas[r].component_prefix, 0) == 0;
    });
  };
  m.component_ready.remove_if(of_replica);
  m.component_restarts.remove_if(of_replica);
  std::fprintf(stderr, "troupe: replica %s is removed%s%s\n", st.replicas[r].name.c_str(),
               failure.empty() ? "" : "; stopping it failed: ", failure.c_str());
}

// Replica r, starting, joins routing once the cluster head says every part is ready; back
// to off, with the reason, when it could not start.
void start_replica(self_ptr self, size_t r, double weight, std::chrono::milliseconds ramp) {
  std::fprintf(stderr, "troupe: replica %s is starting\n", self->state.replicas[r].name.c_str());
  self->request(self->state.options.replica_control, caf::infinite, add_replica_atom::value, int(r))
      .then(
          [=](const scheduler_actor& s) {
            auto& st = self->state;
            st.replicas[r].scheduler = s;
            st.router->set_healthy(r, true);  // every part is ready; the next tick would say so a second late
            st.router->added(r, weight, ramp, clock_type::now());
            std::fprintf(stderr, "troupe: replica %s is ready and serves with weight %g\n", st.replicas[r].name.c_str(),
                         weight);
          },
          [=](const caf::error& e) {
            auto& st = self->state;
            st.router->mark(r, replica_state::off);
            st.replica_errors[r] = error_message(e);
            std::fprintf(stderr, "troupe: replica %s did not start: %s\n", st.replicas[r].name.c_str(),
                         st.replica_errors[r].c_str());
          });
}

// Every replica of the file with its state and load, for /admin/replicas.
std::string replica_listing_json(const gateway_state& st) {
  std::vector<replica_listing> list;
  for (size_t i = 0; i < st.replicas.size(); ++i)
    list.push_back({st.replicas[i].name, replica_state::off, 0, 0, st.replica_errors[i]});
  for (const auto& v : st.router->view(clock_type::now())) {
    replica_listing& l = list[*st.router->index_of(v.name)];
    l.state = v.state;
    l.weight = v.weight;
    l.in_flight = v.in_flight;
  }
  return replicas_json(list);
}

// The health monitor's components, and every replica's place in the router.
void answer_metrics(self_ptr self, const http_call_ptr& http, const std::string& endpoint) {
  auto& st = self->state;
  self->request(st.health, std::chrono::seconds(5), health_atom::value)
      .then(
          [=](const std::vector<component_health>& parts) {
            auto& st = self->state;
            auto& m = *st.metrics;
            for (const auto& p : parts) {
              m.component_ready.add({{"component", p.name}}).set(p.ready ? 1 : 0);
              m.component_restarts.add({{"component", p.name}}).set(p.restarts);
            }
            const auto view = st.router->view(clock_type::now());
            for (const auto& r : view) {
              m.replica_weight.add({{"replica", r.name}}).set(r.weight);
              m.replica_in_flight.add({{"replica", r.name}}).set(r.in_flight);
              m.replica_routable.add({{"replica", r.name}}).set(r.healthy && !r.circuit_open && r.weight > 0 ? 1 : 0);
            }
            answer(self, http, endpoint, 200, st.registry->render(), metrics::content_type.data());
          },
          [=](const caf::error&) {
            answer_error(self, http, endpoint, service_unavailable("the health monitor does not answer"));
          });
}

// Every replica's scheduler figures, in replica order (zero for one not running), to
// `then`; a 503 on `endpoint` when one does not answer.
template <class Then>
void gather_stats(self_ptr self, const http_call_ptr& http, const std::string& endpoint, Then then) {
  struct gathered {
    std::vector<engine_stats> stats;
    size_t answers = 0;
    bool failed = false;
  };
  // Only the replicas that run and are not being stopped answer for sure.
  std::vector<size_t> asked;
  for (size_t i = 0; i < self->state.replicas.size(); ++i)
    if (const auto s = self->state.router->state(i); s == replica_state::serving || s == replica_state::draining)
      asked.push_back(i);
  auto all = std::make_shared<gathered>();
  all->stats.resize(self->state.replicas.size());
  if (asked.empty()) return then(all->stats);
  for (size_t i : asked)
    self->request(self->state.replicas[i].scheduler, std::chrono::seconds(5), stats_atom::value)
        .then(
            [=](const engine_stats& s) {
              all->stats[i] = s;
              if (++all->answers == asked.size() && !all->failed) then(all->stats);
            },
            [=](const caf::error&) {
              if (all->failed) return;
              all->failed = true;
              answer_error(self, http, endpoint, service_unavailable("a scheduler does not answer"));
            });
}

}  // namespace

bool replica_ready(const replica_endpoint& r, const std::vector<component_health>& parts) {
  bool any = false;
  for (const auto& p : parts) {
    if (p.name.rfind(r.component_prefix, 0) != 0) continue;
    if (!p.ready) return false;
    any = true;
  }
  return any;
}

void stop_if_drained(self_ptr self, size_t r) {
  auto& st = self->state;
  if (!st.router->drained(r)) return;
  st.router->mark(r, replica_state::stopping);
  self->request(st.options.replica_control, caf::infinite, remove_replica_atom::value, int(r))
      .then([=](int) { replica_stopped(self, r, ""); },
            [=](const caf::error& e) { replica_stopped(self, r, error_message(e)); });
}

// Ready when some replica is: every one of its components reported ready.
void health(self_ptr self, const http_call_ptr& http, const std::string& endpoint) {
  self->request(self->state.health, std::chrono::seconds(5), health_atom::value)
      .then(
          [=](const std::vector<component_health>& parts) {
            const auto& replicas = self->state.replicas;
            if (std::any_of(replicas.begin(), replicas.end(), [&](const auto& r) { return replica_ready(r, parts); })) {
              const auto& st = self->state;
              if (st.warmup_started && st.warmup_left == 0) return answer(self, http, endpoint, 200, "");
              return answer_error(
                  self, http, endpoint,
                  service_unavailable("warming up: " + std::to_string(st.warmup_left) + " of " +
                                      std::to_string(st.options.warmup_requests) + " warm-up requests running"));
            }
            std::string waiting;
            for (const auto& p : parts)
              if (!p.ready) waiting += (waiting.empty() ? "" : ", ") + p.name + (p.stuck ? " (stuck in a step)" : "");
            answer_error(self, http, endpoint, service_unavailable("not ready: " + waiting));
          },
          [=](const caf::error&) {
            answer_error(self, http, endpoint, service_unavailable("the health monitor does not answer"));
          });
}

// The replicas' scheduler figures, summed, then the rest.
void metrics_page(self_ptr self, const http_call_ptr& http, const std::string& endpoint) {
  gather_stats(self, http, endpoint, [=](const std::vector<engine_stats>& stats) {
    engine_stats t;
    for (const engine_stats& s : stats) {
      t.running += s.running;
      t.waiting += s.waiting;
      t.preemptions += s.preemptions;
      t.recoveries += s.recoveries;
      t.kv.total_blocks += s.kv.total_blocks;
      t.kv.used_blocks += s.kv.used_blocks;
      t.kv.prefix_queries += s.kv.prefix_queries;
      t.kv.prefix_hits += s.kv.prefix_hits;
    }
    auto& st = self->state;
    auto& m = *st.metrics;
    m.running.set(t.running);
    m.waiting.set(t.waiting);
    m.kv_usage.set(t.kv.total_blocks ? double(t.kv.used_blocks) / t.kv.total_blocks : 0.0);
    m.prefix_hit_rate.set(t.kv.prefix_queries ? double(t.kv.prefix_hits) / double(t.kv.prefix_queries) : 0.0);
    m.preemptions.inc(double(t.preemptions - std::min(t.preemptions, st.engine_preemptions)));
    m.recoveries.inc(double(t.recoveries - std::min(t.recoveries, st.engine_recoveries)));
    st.engine_preemptions = t.preemptions;
    st.engine_recoveries = t.recoveries;
    answer_metrics(self, http, endpoint);
  });
}

// What `troupe cluster status` shows: every component's health and every replica's route
// and load.
void admin_status(self_ptr self, const http_call_ptr& http, const std::string& endpoint) {
  gather_stats(self, http, endpoint, [=](const std::vector<engine_stats>& stats) {
    self->request(self->state.health, std::chrono::seconds(5), health_atom::value)
        .then(
            [=](const std::vector<component_health>& parts) {
              cluster_status status{parts, {}};
              for (const auto& v : self->state.router->view(clock_type::now()))
                status.replicas.push_back({v, stats[*self->state.router->index_of(v.name)]});
              answer(self, http, endpoint, 200, status_json(status));
            },
            [=](const caf::error&) {
              answer_error(self, http, endpoint, service_unavailable("the health monitor does not answer"));
            });
  });
}

// GET: every replica's weight, load, health and circuit; POST: new weights (and a ramp).
void admin_traffic(self_ptr self, const http_call_ptr& http, const std::string& endpoint) {
  auto& st = self->state;
  const auto now = clock_type::now();
  if (http->request.method == "POST") {
    auto r = parse_traffic_request(http->request.body);
    if (!r) return answer_error(self, http, endpoint, r.err());
    if (auto set = st.router->set_weights(r->weights, r->ramp, now); !set)
      return answer_error(self, http, endpoint, bad_param("weights", set.err().message));
  }
  answer(self, http, endpoint, 200, traffic_json(st.router->view(now)));
}

// GET /admin/replicas: the list.
void list_replicas(self_ptr self, const http_call_ptr& http, const std::string& endpoint) {
  answer(self, http, endpoint, 200, replica_listing_json(self->state));
}

// POST /admin/replicas/NAME/add: an off replica of the file starts, and serves once every
// part of it is ready. POST /admin/replicas/NAME/remove: a serving one drains (no new
// calls; those in flight finish whole), then stops. Both answer 202 with the list at once;
// the list tells when the change is done.
void change_replica(self_ptr self, const http_call_ptr& http, const std::string& endpoint) {
  auto& st = self->state;
  const auto& req = http->request;
  if (!st.options.replica_control)
    return answer_error(self, http, endpoint,
                        bad_request("this server runs one replica: replicas are added and removed in a cluster "
                                    "(troupe cluster up)"));
  const std::string_view name_and_change =
      std::string_view(req.path).substr(std::string_view("/admin/replicas/").size());
  auto change = parse_replica_change(name_and_change, req.body);
  if (!change) return answer_error(self, http, endpoint, change.err());
  const auto r = st.router->index_of(change->name);
  if (!r)
    return answer_error(
        self, http, endpoint,
        {404, "no replica " + change->name + " in cluster.conf (a replica is added from its [replica.NAME] section)",
         "invalid_request_error", "name", "replica_not_found"});
  const status changed = change->add ? st.router->begin_add(*r) : st.router->begin_remove(*r, clock_type::now());
  if (!changed)
    return answer_error(self, http, endpoint,
                        {409, changed.err().message, "invalid_request_error", "name", "replica_state"});
  st.replica_errors[*r].clear();
  if (change->add) {
    start_replica(self, *r, change->weight.value_or(st.replicas[*r].weight), change->ramp);
  } else {
    std::fprintf(stderr, "troupe: replica %s is draining (%d calls in flight)\n", st.replicas[*r].name.c_str(),
                 st.router->in_flight(*r));
    stop_if_drained(self, *r);
  }
  answer(self, http, endpoint, 202, replica_listing_json(st));
}

}  // namespace troupe::gateway_handlers
