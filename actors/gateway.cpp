// The gateway actor: its state, the behavior that takes requests, token events and ticks,
// and the warm-up it sends itself. Routing, the calls and the admin endpoints are in the
// files gateway_handlers.hpp lists.
#include "actors/gateway.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

#include "actors/gateway_handlers.hpp"
#include "actors/local_sender.hpp"
#include "actors/request_preparer.hpp"
#include "gateway/anthropic/anthropic_request_json.hpp"
#include "gateway/warmup.hpp"

namespace troupe {
namespace gateway_handlers {

void answer(self_ptr self, const http_call_ptr& http, const std::string& endpoint, int status, std::string body,
            const char* type) {
  self->state.metrics->requests.add({{"endpoint", endpoint}, {"status", std::to_string(status)}}).inc();
  std::vector<http::header> extra;
  if (status == 429 || status == 503) extra.push_back({"Retry-After", "1"});
  http->responder->respond(status, type, std::move(body), std::move(extra));
}

bool anthropic_path(const std::string& path) { return path.rfind("/v1/messages", 0) == 0; }

void answer_error(self_ptr self, const http_call_ptr& http, const std::string& endpoint, const api_error& e) {
  answer(self, http, endpoint, e.status, anthropic_path(http->request.path) ? anthropic_error_json(e) : e.to_json());
}

namespace {

// Its own threads, a few: one large request waits for none but those queued behind it.
void start_preparers(self_ptr self) {
  auto& st = self->state;
  preparation_context context;
  context.served_model_names = st.options.served_model_names;
  context.tok = st.tok;
  context.chat = st.chat;
  context.tool_format = st.tool_format;
  context.max_model_len = st.options.max_model_len;
  context.special_tokens_in_content = st.options.special_tokens_in_content;
  context.responses = st.responses;
  const unsigned preparers = std::clamp(std::thread::hardware_concurrency(), 2u, 4u);
  for (unsigned i = 0; i < preparers; ++i)
    st.preparers.push_back(self->spawn<caf::detached + caf::linked>(request_preparer, context));
  st.preparing_on.assign(preparers, 0);
}

void start_router(self_ptr self, std::vector<replica_endpoint> replicas) {
  auto& st = self->state;
  std::vector<std::string> names;
  std::vector<double> weights;
  for (const auto& r : replicas) names.push_back(r.name), weights.push_back(r.weight);
  st.router = std::make_unique<replica_router>(names, weights, st.options.routing, st.options.circuit);
  for (size_t r = 0; r < replicas.size(); ++r)
    if (!replicas[r].scheduler) st.router->mark(r, replica_state::off);  // a standby of the file
  st.replica_errors.resize(replicas.size());
  st.replicas = std::move(replicas);
}

// The warm-up requests go through route() as a client's would, answered by a responder
// that reports back to this actor.
void start_warmup(self_ptr self) {
  auto& st = self->state;
  st.warmup_started = true;
  st.warmup_start = clock_type::now();
  const auto me = caf::actor_cast<gateway_actor>(self);
  for (auto& r : http::warmup_requests(st.options.warmup_requests, st.options.served_model_names.front(),
                                       st.chat != nullptr, st.options.api_key)) {
    auto done = [me](int status, const std::string& body) { caf::anon_send(me, warmed_atom::value, status, body); };
    route(self, std::make_shared<http_call>(std::move(r), std::make_shared<http::warmup_responder>(done)));
  }
}

void on_token_event(self_ptr self, const token_event& ev) {
  auto& st = self->state;
  auto at = st.by_request.find(ev.id);
  if (at == st.by_request.end()) return;
  const auto [call_id, index] = at->second;
  const http_call_ptr http = st.calls[call_id].http;
  contained(self, http, "a token event", [&] { on_tokens(self, call_id, index, ev); });
}

// Each tick beats the pulse and takes the replicas' health into routing; the first that
// finds a replica ready starts the warm-up.
void on_tick(self_ptr self) {
  if (self->state.options.pulse) self->state.options.pulse->beat();
  self->request(self->state.health, std::chrono::seconds(5), health_atom::value)
      .then(
          [=](const std::vector<component_health>& parts) {
            auto& st = self->state;
            bool any_ready = false;
            for (size_t r = 0; r < st.replicas.size(); ++r) {
              const bool ready = replica_ready(st.replicas[r], parts);
              st.router->set_healthy(r, ready);
              any_ready = any_ready || ready;
            }
            if (any_ready && !st.warmup_started) start_warmup(self);
          },
          [](const caf::error&) {});  // no news: the replicas keep their last health
  // Until the warm-up starts, a ready engine should not wait a second for it.
  const auto next = self->state.warmup_started ? std::chrono::milliseconds(1000) : std::chrono::milliseconds(50);
  self->delayed_send(self, next, tick_atom::value);
}

void on_warmed(self_ptr self, int status, const std::string& body) {
  auto& st = self->state;
  if (status != 200)
    std::fprintf(stderr, "troupe: a warm-up request failed with status %d: %.300s\n", status, body.c_str());
  if (--st.warmup_left > 0) return;
  std::fprintf(stderr, "troupe: warm-up: %d requests in %.2f s; /health is ready\n", st.options.warmup_requests,
               seconds(clock_type::now() - st.warmup_start));
}

}  // namespace
}  // namespace gateway_handlers

gateway_state::~gateway_state() {
  for (const auto& [id, c] : calls)
    for (request_id r : c.requests) caf::anon_send(replicas[c.replica].scheduler, cancel_atom::value, r);
}

http_call::~http_call() {
  if (responder)
    responder->fail(503, service_unavailable("the gateway stopped while it held this request; retry it").to_json());
}

gateway_metrics::gateway_metrics(metrics::registry& r)
    : requests(r.add_counter("troupe_requests_total", "HTTP requests answered, by endpoint and status code.")),
      prompt_tokens(r.add_counter("troupe_prompt_tokens_total", "Prompt tokens submitted to the engine.").add()),
      generation_tokens(r.add_counter("troupe_generation_tokens_total", "Tokens generated.").add()),
      time_to_first_token(r.add_histogram("troupe_time_to_first_token_seconds", "Time from request to its first token.",
                                          {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30})
                              .add()),
      time_per_output_token(r.add_histogram("troupe_time_per_output_token_seconds",
                                            "Mean time between output tokens of a request.",
                                            {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1})
                                .add()),
      e2e_latency(r.add_histogram("troupe_e2e_request_latency_seconds", "Time from request to its last byte.",
                                  {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120})
                      .add()),
      running(r.add_gauge("troupe_num_requests_running", "Sequences in the running batch.").add()),
      waiting(r.add_gauge("troupe_num_requests_waiting", "Sequences waiting for admission.").add()),
      kv_usage(r.add_gauge("troupe_kv_cache_usage_ratio", "Fraction of KV blocks held by sequences.").add()),
      prefix_hit_rate(
          r.add_gauge("troupe_prefix_cache_hit_ratio", "Prefix-cache block hits over lookups since start.").add()),
      preemptions(r.add_counter("troupe_preemptions_total", "Sequences preempted for lack of KV blocks.").add()),
      recoveries(r.add_counter("troupe_recoveries_total", "Sequences re-prefilled after a failure.").add()),
      component_ready(r.add_gauge("troupe_component_ready", "1 when the component reported ready.")),
      component_restarts(r.add_gauge("troupe_component_restarts", "Restarts of the component by its supervisor.")),
      replica_requests(r.add_counter("troupe_replica_requests_total", "Calls routed to the replica.")),
      replica_weight(
          r.add_gauge("troupe_replica_weight", "The replica's share of new requests, relative to the others.")),
      replica_in_flight(r.add_gauge("troupe_replica_requests_in_flight", "Requests the replica is running.")),
      replica_routable(
          r.add_gauge("troupe_replica_routable",
                      "1 when the replica takes new requests (healthy, circuit closed, weight above 0).")) {}

gateway_actor::behavior_type gateway(gateway_actor::stateful_pointer<gateway_state> self, gateway_options options,
                                     std::shared_ptr<const tokenizer> tok, std::shared_ptr<const chat_template> chat,
                                     std::vector<replica_endpoint> replicas, health_monitor_actor health) {
  using namespace gateway_handlers;
  auto& st = self->state;
  st.options = std::move(options);
  st.tok = std::move(tok);
  st.chat = std::move(chat);
  if (st.chat) st.tool_format = tool_call_parser::format_of_template(st.chat->tools_source());
  start_preparers(self);
  start_router(self, std::move(replicas));
  st.health = health;
  st.registry = std::make_shared<metrics::registry>();
  st.metrics = std::make_unique<gateway_metrics>(*st.registry);
  // Request ids stay unique across the gateway's restarts, in the schedulers that outlive it.
  static std::atomic<request_id> starts{0};
  const request_id start = starts++;
  st.next_request = (start << 40) + 1;
  // The engine is warm by the time a gateway is started again.
  st.warmup_left = start == 0 ? std::max(0, st.options.warmup_requests) : 0;
  st.warmup_started = st.warmup_left == 0;
  self->send(self, tick_atom::value);
  return {
      [=](http_atom, const http_call_ptr& http) { contained(self, http, "a request", [&] { route(self, http); }); },
      [=](const token_event& ev) { on_token_event(self, ev); },
      [=](closed_atom, uint64_t call_id) { forget_call(self, call_id, 499); },
      [=](tick_atom) { on_tick(self); },
      [=](hang_atom, int ms) {
        if (from_this_process(self)) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      },
      [=](warmed_atom, int status, const std::string& body) { on_warmed(self, status, body); },
  };
}

}  // namespace troupe
