#include "actors/gateway.hpp"

#include <openssl/crypto.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

#include "actors/local_sender.hpp"
#include "actors/replica_control.hpp"
#include "actors/request_preparer.hpp"
#include "gateway/admin/admin_replicas_json.hpp"
#include "gateway/admin/admin_status_json.hpp"
#include "gateway/admin/admin_traffic_json.hpp"
#include "gateway/anthropic/anthropic_request_json.hpp"
#include "gateway/api_error.hpp"
#include "gateway/openai/openai_endpoints.hpp"
#include "gateway/warmup.hpp"

namespace troupe {
namespace {

using self_ptr = gateway_actor::stateful_pointer<gateway_state>;
using clock_type = std::chrono::steady_clock;
constexpr const char* json_type = "application/json";

double seconds(clock_type::duration d) { return std::chrono::duration<double>(d).count(); }

void answer(self_ptr self, const http_call_ptr& http, const std::string& endpoint, int status, std::string body,
            const char* type = json_type) {
  self->state.metrics->requests.add({{"endpoint", endpoint}, {"status", std::to_string(status)}}).inc();
  std::vector<http::header> extra;
  if (status == 429 || status == 503) extra.push_back({"Retry-After", "1"});
  http->responder->respond(status, type, std::move(body), std::move(extra));
}

// Anthropic's clients read their API's error shape; everyone else OpenAI's.
bool anthropic_path(const std::string& path) { return path.rfind("/v1/messages", 0) == 0; }

void answer_error(self_ptr self, const http_call_ptr& http, const std::string& endpoint, const api_error& e) {
  answer(self, http, endpoint, e.status, anthropic_path(http->request.path) ? anthropic_error_json(e) : e.to_json());
}

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

// A replica being removed whose last call has ended is stopped.
void stop_if_drained(self_ptr self, size_t r) {
  auto& st = self->state;
  if (!st.router->drained(r)) return;
  st.router->mark(r, replica_state::stopping);
  self->request(st.options.replica_control, caf::infinite, remove_replica_atom::value, int(r))
      .then([=](int) { replica_stopped(self, r, ""); },
            [=](const caf::error& e) { replica_stopped(self, r, error_message(e)); });
}

// The stored conversation of a Responses turn: its messages and the reply as an assistant
// message, in the chat form a next turn's prompt is rendered from.
nlohmann::ordered_json conversation_after(const responses_turn& turn, const reply_summary& reply) {
  nlohmann::ordered_json conversation = turn.conversation;
  nlohmann::ordered_json m{{"role", "assistant"}, {"content", reply.text}};
  if (!reply.reasoning.empty()) m["reasoning_content"] = reply.reasoning;
  if (!reply.calls.empty()) {
    m["tool_calls"] = nlohmann::ordered_json::array();
    for (const tool_call& call : reply.calls)
      m["tool_calls"].push_back({{"id", call.id}, {"type", "function"},
                                 {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
  }
  conversation.push_back(std::move(m));
  return conversation;
}

// The call is over: its last bytes go out and it is forgotten. Returns the response body,
// rendered once for the client, the response store and `want_body` alike; empty when the
// call failed or nobody wants it.
std::string finish_call(self_ptr self, uint64_t id, bool want_body = false) {
  auto& st = self->state;
  auto it = st.calls.find(id);
  if (it == st.calls.end()) return {};
  auto& c = it->second;
  const generation_call& g = *c.generation;
  const int status = g.failed() ? g.failure().status : 200;
  const bool stored = c.turn && c.turn->store && !g.failed();
  std::string body = !g.failed() && (!c.stream || stored || want_body) ? g.response_body() : std::string();
  if (c.stream) {
    c.http->responder->write(g.failed() ? g.stream_error(g.failure()) : g.stream_end());
    c.http->responder->end();
  } else {
    c.http->responder->respond(status, json_type,
                               !g.failed()                            ? body
                               : anthropic_path(c.http->request.path) ? anthropic_error_json(g.failure())
                                                                      : g.failure().to_json());
  }
  if (c.turn) {
    st.call_of_response.erase(c.turn->id);
    if (stored) st.responses->put(c.turn->id, {body, conversation_after(*c.turn, g.summary())});
  }
  st.metrics->requests.add({{"endpoint", c.endpoint}, {"status", std::to_string(status)}}).inc();
  const auto now = clock_type::now();
  st.metrics->e2e_latency.observe(seconds(now - c.start));
  if (c.has_first_token && g.completion_tokens() > 1)
    st.metrics->time_per_output_token.observe(seconds(now - c.first_token) / (g.completion_tokens() - 1));
  st.router->finished(c.replica, g.failed() && g.failure().status >= 500, now);
  const size_t replica = c.replica;
  for (request_id r : c.requests) st.by_request.erase(r);
  st.calls.erase(it);
  stop_if_drained(self, replica);
  return body;
}

// The call's requests are cancelled and it is forgotten, unanswered here: its client left
// (`status` 499) or the caller answers it.
void forget_call(self_ptr self, uint64_t call_id, int status) {
  auto& st = self->state;
  auto it = st.calls.find(call_id);
  if (it == st.calls.end()) return;
  for (request_id r : it->second.requests) {
    self->send(st.replicas[it->second.replica].scheduler, cancel_atom::value, r);
    st.by_request.erase(r);
  }
  st.router->finished(it->second.replica, false, clock_type::now());
  st.metrics->requests.add({{"endpoint", it->second.endpoint}, {"status", std::to_string(status)}}).inc();
  if (it->second.turn) st.call_of_response.erase(it->second.turn->id);
  const size_t replica = it->second.replica;
  st.calls.erase(it);
  stop_if_drained(self, replica);
}

// A handler that throws has met a bug: its request fails with a 500 (an error event if its
// stream began), the gateway goes on.
template <class Work>
void contained(self_ptr self, const http_call_ptr& http, const char* what, Work work) {
  try {
    work();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "troupe: gateway: %s failed: %s\n", what, e.what());
    std::vector<uint64_t> of_request;
    for (const auto& [id, c] : self->state.calls)
      if (c.http == http) of_request.push_back(id);
    for (uint64_t id : of_request) forget_call(self, id, 500);
    http->responder->fail(500, internal_error(std::string("internal error: ") + e.what()).to_json());
  }
}

// Whether every component of the replica reported ready (and there is one).
bool replica_ready(const replica_endpoint& r, const std::vector<component_health>& parts) {
  bool any = false;
  for (const auto& p : parts) {
    if (p.name.rfind(r.component_prefix, 0) != 0) continue;
    if (!p.ready) return false;
    any = true;
  }
  return any;
}

// Validates prompts against the model, builds the call and submits one engine request
// per choice.
void start_generation(self_ptr self, const http_call_ptr& http, const std::string& endpoint, api_kind kind,
                      const generation_options& options, int logprobs, bool echo,
                      std::vector<generation_call::choice_prompt> prompts, const chat_reply_parsing& parsing = {},
                      std::shared_ptr<reply_dialect> dialect = nullptr, std::optional<responses_turn> turn = {}) {
  auto& st = self->state;
  // Pending work is counted in sequences (prompts x n), which is what the engine runs.
  const size_t sequences = prompts.size() * size_t(options.n);
  if (sequences > st.options.max_pending)
    return answer_error(self, http, endpoint,
                        bad_param(prompts.size() > 1 ? "prompt" : "n",
                                  "the request asks for " + std::to_string(sequences) + " sequences (prompts x n); this server "
                                  "takes at most " + std::to_string(st.options.max_pending) + " at once"));
  if (st.by_request.size() + sequences > st.options.max_pending)
    return answer_error(self, http, endpoint, {429, "the server has too many requests queued; retry later", "rate_limit_error", {}, {}});
  for (const auto& [id, bias] : options.sampling.logit_bias)
    if (id >= st.options.vocab_size)
      return answer_error(self, http, endpoint, bad_param("logit_bias", "token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                                                                            std::to_string(st.options.vocab_size - 1) + ")"));
  for (const auto& p : prompts) {
    for (int id : p.ids)
      if (id < 0 || id >= st.options.vocab_size)
        return answer_error(self, http, endpoint, bad_param("prompt", "token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                                                                           std::to_string(st.options.vocab_size - 1) + ")"));
    const int len = int(p.ids.size());
    if (len == 0) return answer_error(self, http, endpoint, bad_param("prompt", "the prompt is empty"));
    if (len + options.max_tokens > st.options.max_model_len) {
      // The field to shorten: the prompt when it alone is too long, else max_tokens.
      const char* prompt_param = kind == api_kind::chat ? "messages" : "prompt";
      api_error e = bad_param(len < st.options.max_model_len ? "max_tokens" : prompt_param,
                              "This model's maximum context length is " + std::to_string(st.options.max_model_len) +
                                  " tokens. However, you requested " + std::to_string(len + options.max_tokens) +
                                  " tokens (" + std::to_string(len) + " in the " + prompt_param + ", " +
                                  std::to_string(options.max_tokens) + " in the completion). Please reduce the "
                                  "length of the " + prompt_param + " or the completion.");
      e.code = "context_length_exceeded";
      return answer_error(self, http, endpoint, std::move(e));
    }
  }
  std::vector<int> stops = options.stop_token_ids;
  // A constrained output ends where its grammar does: with eos, ignore_eos or not.
  const bool constrained = !options.output_grammar.rules.empty();
  if (!options.ignore_eos || constrained)
    stops.insert(stops.end(), st.options.eos_token_ids.begin(), st.options.eos_token_ids.end());
  if (constrained && stops.empty())
    return answer_error(self, http, endpoint, bad_param("response_format", "this model has no end-of-sequence token to end a constrained output"));
  // n choices per prompt, in the order OpenAI numbers them.
  std::vector<generation_call::choice_prompt> choices;
  for (const auto& p : prompts)
    for (int j = 0; j < options.n; ++j) choices.push_back(p);
  // One replica takes every choice of the call; a session (the user field, or the
  // x-session-id header) keeps its replica.
  const std::string session =
      !options.user.empty() ? options.user : std::string(http->request.header_value("x-session-id"));
  const auto replica = st.router->pick(session, choices.front().ids, clock_type::now());
  if (!replica)
    return answer_error(self, http, endpoint,
                        service_unavailable("no replica can take requests now (each is drained, down or failing)"));
  st.metrics->replica_requests.add({{"replica", st.replicas[*replica].name}}).inc();
  const uint64_t call_id = st.next_call++;
  auto& c = st.calls[call_id];
  c.replica = *replica;
  c.endpoint = endpoint;
  c.http = http;
  c.stream = options.stream;
  c.start = clock_type::now();
  c.generation = std::make_unique<generation_call>(kind, (kind == api_kind::chat ? "chatcmpl-" : "cmpl-") + std::to_string(call_id),
                                                   options, logprobs, echo, choices, st.tok, parsing, std::move(dialect));
  if (turn) st.call_of_response[turn->id] = call_id;
  c.turn = std::move(turn);
  http->responder->on_close([self, call_id] { caf::anon_send(caf::actor_cast<gateway_actor>(self), closed_atom::value, call_id); });
  if (options.stream) {
    http->responder->start_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
    if (auto first = c.generation->stream_start(); !first.empty()) http->responder->write(first);
  }
  for (size_t i = 0; i < choices.size(); ++i) {
    generation_request r;
    r.id = st.next_request++;
    r.prompt = choices[i].ids;
    r.sampling = options.sampling;
    r.sampling.top_logprobs = logprobs;
    // Every request gets a seed, so a replay after a failure samples the same tokens.
    r.sampling.seed = options.has_seed ? options.sampling.seed + i : st.seeds();
    r.max_tokens = options.max_tokens;
    r.stop_token_ids = stops;
    r.output_grammar = options.output_grammar;
    c.requests.push_back(r.id);
    st.by_request[r.id] = {call_id, int(i)};
    st.metrics->prompt_tokens.inc(double(r.prompt.size()));
    self->send(st.replicas[c.replica].scheduler, submit_atom::value, std::move(r), caf::actor_cast<caf::actor>(self));
  }
}

// What a preparer made of a request: the engine's work, or its answer.
void prepared(self_ptr self, const http_call_ptr& http, const std::string& endpoint, prepared_request& p) {
  if (auto* e = std::get_if<api_error>(&p.what)) return answer_error(self, http, endpoint, *e);
  if (auto* t = std::get_if<tokenize_answer>(&p.what)) return answer(self, http, endpoint, 200, std::move(t->json));
  auto& g = std::get<prepared_generation>(p.what);
  start_generation(self, http, endpoint, g.kind, g.options, g.logprobs, g.echo, std::move(g.prompts), g.parsing,
                   std::move(g.dialect), std::move(g.turn));
}

// The request goes to the preparer with the least work queued; the gateway takes other
// requests meanwhile. Requests being prepared count as pending.
void prepare(self_ptr self, const http_call_ptr& http) {
  auto& st = self->state;
  const std::string endpoint = http->request.path;
  if (st.preparing + st.by_request.size() >= st.options.max_pending)
    return answer_error(self, http, endpoint, {429, "the server has too many requests queued; retry later", "rate_limit_error", {}, {}});
  const size_t w = size_t(std::min_element(st.preparing_on.begin(), st.preparing_on.end()) - st.preparing_on.begin());
  ++st.preparing_on[w];
  ++st.preparing;
  auto done = [self, w] {
    --self->state.preparing_on[w];
    --self->state.preparing;
  };
  self->request(st.preparers[w], caf::infinite, prepare_atom::value, http)
      .then(
          [=](const std::shared_ptr<prepared_request>& p) {
            done();
            contained(self, http, "a request", [&] { prepared(self, http, endpoint, *p); });
          },
          [=](const caf::error& e) {
            done();
            answer_error(self, http, endpoint,
                         {500, "preparing the request failed: " + error_message(e), "internal_server_error", {}, {}});
          });
}

void detokenize(self_ptr self, const http_call_ptr& http) {
  auto& st = self->state;
  auto r = parse_detokenize_request(http->request.body);
  if (!r) return answer_error(self, http, "/detokenize", r.err());
  if (!serves_model(st.options.served_model_names, r->model)) return answer_error(self, http, "/detokenize", unknown_model(r->model));
  for (int id : r->tokens)
    if (id < 0 || id >= st.tok->vocab_size())
      return answer_error(self, http, "/detokenize", bad_param("tokens", "token id " + std::to_string(id) + " is outside the vocabulary"));
  answer(self, http, "/detokenize", 200, detokenize_json(st.tok->decode(r->tokens)));
}

// Ready when some replica is: every one of its components reported ready.
void health(self_ptr self, const http_call_ptr& http) {
  self->request(self->state.health, std::chrono::seconds(5), health_atom::value)
      .then(
          [=](const std::vector<component_health>& parts) {
            const auto& replicas = self->state.replicas;
            if (std::any_of(replicas.begin(), replicas.end(), [&](const auto& r) { return replica_ready(r, parts); })) {
              const auto& st = self->state;
              if (st.warmup_started && st.warmup_left == 0) return answer(self, http, "/health", 200, "");
              return answer_error(self, http, "/health",
                                  service_unavailable("warming up: " + std::to_string(st.warmup_left) + " of " +
                                                      std::to_string(st.options.warmup_requests) +
                                                      " warm-up requests running"));
            }
            std::string waiting;
            for (const auto& p : parts)
              if (!p.ready) waiting += (waiting.empty() ? "" : ", ") + p.name + (p.stuck ? " (stuck in a step)" : "");
            answer_error(self, http, "/health", service_unavailable("not ready: " + waiting));
          },
          [=](const caf::error&) {
            answer_error(self, http, "/health", service_unavailable("the health monitor does not answer"));
          });
}

// GET: every replica's weight, load, health and circuit; POST: new weights (and a ramp).
void admin_traffic(self_ptr self, const http_call_ptr& http) {
  const std::string endpoint = "/admin/traffic";
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

// Replica r, starting, joins routing once replica_control says every part is ready; back
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

// GET /admin/replicas: the list. POST /admin/replicas/NAME/add: an off replica of the file
// starts, and serves once every part of it is ready. POST /admin/replicas/NAME/remove: a
// serving one drains (no new calls; those in flight finish whole), then stops. Both answer
// 202 with the list at once; the list tells when the change is done.
void admin_replicas(self_ptr self, const http_call_ptr& http) {
  const std::string endpoint = "/admin/replicas";
  auto& st = self->state;
  const auto& req = http->request;
  const bool get = req.method == "GET" || req.method == "HEAD";
  if (req.path == endpoint && get) return answer(self, http, endpoint, 200, replica_listing_json(st));
  if (req.path == endpoint || req.method != "POST")
    return answer_error(self, http, endpoint,
                        method_not_allowed(req.method, req.path));
  if (!st.options.replica_control)
    return answer_error(self, http, endpoint,
                        bad_request("this server runs one replica: replicas are added and removed in a cluster "
                                    "(troupe cluster up)"));
  auto change = parse_replica_change(std::string_view(req.path).substr(endpoint.size() + 1), req.body);
  if (!change) return answer_error(self, http, endpoint, change.err());
  const auto r = st.router->index_of(change->name);
  if (!r)
    return answer_error(self, http, endpoint,
                        {404, "no replica " + change->name + " in cluster.conf (a replica is added from its [replica.NAME] section)",
                         "invalid_request_error", "name", "replica_not_found"});
  const status changed = change->add ? st.router->begin_add(*r) : st.router->begin_remove(*r, clock_type::now());
  if (!changed)
    return answer_error(self, http, endpoint, {409, changed.err().message, "invalid_request_error", "name", "replica_state"});
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

// The health monitor's components, and every replica's place in the router.
void answer_metrics(self_ptr self, const http_call_ptr& http) {
  auto& st = self->state;
  self->request(st.health, std::chrono::seconds(5), health_atom::value)
      .then([=](const std::vector<component_health>& parts) {
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
        answer(self, http, "/metrics", 200, st.registry->render(), metrics::content_type.data());
      },
      [=](const caf::error&) {
        answer_error(self, http, "/metrics", service_unavailable("the health monitor does not answer"));
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

// The replicas' scheduler figures, summed, then the rest.
void metrics_page(self_ptr self, const http_call_ptr& http) {
  gather_stats(self, http, "/metrics", [=](const std::vector<engine_stats>& stats) {
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
    answer_metrics(self, http);
  });
}

// What `troupe cluster status` shows: every component's health and every replica's route
// and load.
void admin_status(self_ptr self, const http_call_ptr& http) {
  const std::string endpoint = "/admin/status";
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

// "Authorization: Bearer KEY", the scheme in any case (RFC 9110), or Anthropic's
// "x-api-key: KEY"; the key compared in constant time.
bool presents(const http::request& req, const std::string& key) {
  std::string_view api_key = req.header_value("x-api-key");
  if (!api_key.empty() && api_key.size() == key.size() && CRYPTO_memcmp(api_key.data(), key.data(), key.size()) == 0)
    return true;
  std::string_view value = req.header_value("authorization");
  const size_t space = value.find(' ');
  if (space == std::string_view::npos || !http::equals_ignoring_case(value.substr(0, space), "bearer")) return false;
  value.remove_prefix(space);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  return value.size() == key.size() && CRYPTO_memcmp(value.data(), key.data(), key.size()) == 0;
}

// The API key guards the API; /admin/* asks for the admin key when there is one; /metrics,
// when protected, takes either. No key configured: open.
bool authorized(const gateway_options& o, const http::request& req) {
  const std::string& path = req.path;
  const bool admin = path.rfind("/admin/", 0) == 0;
  if (admin && !o.admin_key.empty()) return presents(req, o.admin_key);
  if (path == "/metrics") {
    if (!o.protect_metrics) return true;
    return (!o.api_key.empty() && presents(req, o.api_key)) || (!o.admin_key.empty() && presents(req, o.admin_key));
  }
  const bool guarded = admin || path.rfind("/v1/", 0) == 0 || path == "/tokenize" || path == "/detokenize";
  return !guarded || o.api_key.empty() || presents(req, o.api_key);
}

// The routes with one method each; /admin/traffic and /admin/replicas route themselves.
struct endpoint {
  const char* path;
  bool post;
  void (*handle)(self_ptr, const http_call_ptr&);
};
const endpoint endpoints[] = {
    {"/health", false, health},
    {"/metrics", false, metrics_page},
    {"/admin/status", false, admin_status},
    {"/version", false, [](self_ptr s, const http_call_ptr& h) { answer(s, h, "/version", 200, version_json()); }},
    {"/v1/models", false,
     [](self_ptr s, const http_call_ptr& h) {
       answer(s, h, "/v1/models", 200, models_json(s->state.options.served_model_names, s->state.options.max_model_len));
     }},
    {"/v1/completions", true, prepare},
    {"/v1/chat/completions", true, prepare},
    {"/tokenize", true, prepare},
    {"/v1/responses", true, prepare},
    {"/v1/messages", true, prepare},
    {"/v1/messages/count_tokens", true, prepare},
    {"/detokenize", true, detokenize},
};

// The endpoint a request is counted under in /metrics: a route, never the raw path, so
// that unknown paths cannot add series.
std::string endpoint_label(const std::string& path) {
  for (const auto& e : endpoints)
    if (path == e.path) return path;
  if (path == "/admin/traffic") return path;
  if (model_id_of_path(path)) return "/v1/models";
  if (path.rfind("/v1/responses/", 0) == 0) return "/v1/responses/{id}";
  if (path == "/admin/replicas" || path.rfind("/admin/replicas/", 0) == 0) return "/admin/replicas";
  return "other";
}

// GET /v1/responses/{id} (a stored response), DELETE it, POST .../cancel (a running one,
// which ends where it stands with status "cancelled").
void stored_response(self_ptr self, const http_call_ptr& http) {
  auto& st = self->state;
  const auto& req = http->request;
  const std::string label = "/v1/responses/{id}";
  std::string id = req.path.substr(std::string("/v1/responses/").size());
  const bool cancel = id.size() > 7 && id.ends_with("/cancel");
  if (cancel) id.resize(id.size() - 7);
  const std::string method = req.method == "HEAD" ? "GET" : req.method;
  if (id.empty() || id.find('/') != std::string::npos)
    return answer_error(self, http, label, no_endpoint(req.path));
  if ((cancel && method != "POST") || (!cancel && method != "GET" && method != "DELETE"))
    return answer_error(self, http, label, method_not_allowed(req.method, req.path));
  const api_error missing{404, "Response with id '" + id + "' not found.", "invalid_request_error", {}, "response_not_found"};
  if (cancel) {
    auto running = st.call_of_response.find(id);
    if (running == st.call_of_response.end()) {
      if (st.responses->get(id)) return answer_error(self, http, label, bad_param("response_id", "Response with id '" + id + "' has already finished."));
      return answer_error(self, http, label, missing);
    }
    const uint64_t call_id = running->second;
    auto& c = st.calls[call_id];
    for (request_id r : c.requests) self->send(st.replicas[c.replica].scheduler, cancel_atom::value, r);
    c.generation->cancel();
    return answer(self, http, label, 200, finish_call(self, call_id, true));
  }
  if (method == "DELETE") {
    if (!st.responses->erase(id)) return answer_error(self, http, label, missing);
    return answer(self, http, label, 200, nlohmann::json{{"id", id}, {"object", "response"}, {"deleted", true}}.dump());
  }
  auto stored = st.responses->get(id);
  if (!stored) return answer_error(self, http, label, missing);
  answer(self, http, label, 200, stored->response);
}

void route(self_ptr self, const http_call_ptr& http) {
  const auto& req = http->request;
  const std::string& path = req.path;
  const bool get = req.method == "GET" || req.method == "HEAD", post = req.method == "POST";
  if (!authorized(self->state.options, req))
    return answer_error(self, http, endpoint_label(path),
                        {401, "Incorrect API key provided.", "invalid_request_error", {}, "invalid_api_key"});
  if (path == "/admin/replicas" || path.rfind("/admin/replicas/", 0) == 0) return admin_replicas(self, http);
  if (path == "/admin/traffic") {
    if (!get && !post)
      return answer_error(self, http, path, method_not_allowed(req.method, path));
    return admin_traffic(self, http);
  }
  if (std::optional<std::string> id = model_id_of_path(path)) {
    if (!get)
      return answer_error(self, http, "/v1/models", method_not_allowed(req.method, path));
    const auto& o = self->state.options;
    if (!serves_model(o.served_model_names, *id)) return answer_error(self, http, "/v1/models", unknown_model(*id));
    return answer(self, http, "/v1/models", 200, model_json(*id, o.max_model_len));
  }
  if (path.rfind("/v1/responses/", 0) == 0) return stored_response(self, http);
  for (const auto& e : endpoints) {
    if (path != e.path) continue;
    if ((e.post && !post) || (!e.post && !get))
      return answer_error(self, http, path, method_not_allowed(req.method, path));
    return e.handle(self, http);
  }
  answer_error(self, http, "other", no_endpoint(path));
}

// New tokens (or the end) of choice `index` of a call.
void on_tokens(self_ptr self, uint64_t call_id, int index, const token_event& ev) {
  auto& st = self->state;
  auto& c = st.calls[call_id];
  if (!ev.tokens.empty() && !c.has_first_token) {
    c.has_first_token = true;
    c.first_token = clock_type::now();
    st.metrics->time_to_first_token.observe(seconds(c.first_token - c.start));
  }
  st.metrics->generation_tokens.inc(double(ev.tokens.size()));
  bool cancel = false;
  std::string out = c.generation->on_event(index, ev, cancel);
  const scheduler_actor& scheduler = st.replicas[c.replica].scheduler;
  if (cancel) self->send(scheduler, cancel_atom::value, ev.id);
  if (!out.empty()) c.http->responder->write(std::move(out));
  if (c.generation->failed())  // one failed choice fails the call: stop the others
    for (request_id r : c.requests)
      if (r != ev.id) self->send(scheduler, cancel_atom::value, r);
  if (c.generation->done() || c.generation->failed()) finish_call(self, call_id);
}

// The warm-up requests go through route() as a client's would, answered by a responder
// that reports back to this actor.
void start_warmup(self_ptr self) {
  auto& st = self->state;
  st.warmup_started = true;
  st.warmup_start = clock_type::now();
  const auto me = caf::actor_cast<gateway_actor>(self);
  for (auto& r : http::warmup_requests(st.options.warmup_requests, st.options.served_model_names.front(), st.chat != nullptr,
                                       st.options.api_key)) {
    auto done = [me](int status, const std::string& body) { caf::anon_send(me, warmed_atom::value, status, body); };
    route(self, std::make_shared<http_call>(std::move(r), std::make_shared<http::warmup_responder>(done)));
  }
}

}  // namespace

gateway_state::~gateway_state() {
  for (const auto& [id, c] : calls)
    for (request_id r : c.requests) caf::anon_send(replicas[c.replica].scheduler, cancel_atom::value, r);
}

http_call::~http_call() {
  if (responder)
    responder->fail(503, service_unavailable("the gateway stopped while it held this request; retry it")
                             .to_json());
}

gateway_metrics::gateway_metrics(metrics::registry& r)
    : requests(r.add_counter("troupe_requests_total", "HTTP requests answered, by endpoint and status code.")),
      prompt_tokens(r.add_counter("troupe_prompt_tokens_total", "Prompt tokens submitted to the engine.").add()),
      generation_tokens(r.add_counter("troupe_generation_tokens_total", "Tokens generated.").add()),
      time_to_first_token(r.add_histogram("troupe_time_to_first_token_seconds", "Time from request to its first token.",
                                          {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}).add()),
      time_per_output_token(r.add_histogram("troupe_time_per_output_token_seconds", "Mean time between output tokens of a request.",
                                            {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}).add()),
      e2e_latency(r.add_histogram("troupe_e2e_request_latency_seconds", "Time from request to its last byte.",
                                  {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}).add()),
      running(r.add_gauge("troupe_num_requests_running", "Sequences in the running batch.").add()),
      waiting(r.add_gauge("troupe_num_requests_waiting", "Sequences waiting for admission.").add()),
      kv_usage(r.add_gauge("troupe_kv_cache_usage_ratio", "Fraction of KV blocks held by sequences.").add()),
      prefix_hit_rate(r.add_gauge("troupe_prefix_cache_hit_ratio", "Prefix-cache block hits over lookups since start.").add()),
      preemptions(r.add_counter("troupe_preemptions_total", "Sequences preempted for lack of KV blocks.").add()),
      recoveries(r.add_counter("troupe_recoveries_total", "Sequences re-prefilled after a failure.").add()),
      component_ready(r.add_gauge("troupe_component_ready", "1 when the component reported ready.")),
      component_restarts(r.add_gauge("troupe_component_restarts", "Restarts of the component by its supervisor.")),
      replica_requests(r.add_counter("troupe_replica_requests_total", "Calls routed to the replica.")),
      replica_weight(r.add_gauge("troupe_replica_weight", "The replica's share of new requests, relative to the others.")),
      replica_in_flight(r.add_gauge("troupe_replica_requests_in_flight", "Requests the replica is running.")),
      replica_routable(r.add_gauge("troupe_replica_routable", "1 when the replica takes new requests (healthy, circuit closed, weight above 0).")) {}

gateway_actor::behavior_type gateway(gateway_actor::stateful_pointer<gateway_state> self, gateway_options options,
                                     std::shared_ptr<const tokenizer> tok,
                                     std::shared_ptr<const chat_template> chat,
                                     std::vector<replica_endpoint> replicas, health_monitor_actor health) {
  auto& st = self->state;
  st.options = std::move(options);
  st.tok = std::move(tok);
  st.chat = std::move(chat);
  if (st.chat) st.tool_format = tool_call_parser::format_of_template(st.chat->tools_source());
  // Its own threads, a few: one large request waits for none but those queued behind it.
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
  std::vector<std::string> names;
  std::vector<double> weights;
  for (const auto& r : replicas) names.push_back(r.name), weights.push_back(r.weight);
  st.router = std::make_unique<replica_router>(names, weights, st.options.routing, st.options.circuit);
  for (size_t r = 0; r < replicas.size(); ++r)
    if (!replicas[r].scheduler) st.router->mark(r, replica_state::off);  // a standby of the file
  st.replica_errors.resize(replicas.size());
  st.replicas = std::move(replicas);
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
      [=](const token_event& ev) {
        auto& st = self->state;
        auto at = st.by_request.find(ev.id);
        if (at == st.by_request.end()) return;
        const auto [call_id, index] = at->second;
        const http_call_ptr http = st.calls[call_id].http;
        contained(self, http, "a token event", [&] { on_tokens(self, call_id, index, ev); });
      },
      [=](closed_atom, uint64_t call_id) { forget_call(self, call_id, 499); },
      [=](tick_atom) {
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
      },
      [=](hang_atom, int ms) {
        if (from_this_process(self)) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      },
      [=](warmed_atom, int status, const std::string& body) {
        auto& st = self->state;
        if (status != 200)
          std::fprintf(stderr, "troupe: a warm-up request failed with status %d: %.300s\n", status, body.c_str());
        if (--st.warmup_left > 0) return;
        std::fprintf(stderr, "troupe: warm-up: %d requests in %.2f s; /health is ready\n", st.options.warmup_requests,
                     seconds(clock_type::now() - st.warmup_start));
      },
  };
}

}  // namespace troupe
