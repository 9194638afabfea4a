// The gateway's generation calls: a request goes to a preparer, is admitted against the
// model's and the server's limits, runs on one replica as one engine request per choice,
// streams or collects its tokens, and ends answered (or cancelled when its client left).
// The Responses API's stored responses are read, deleted and cancelled here too.
#include <algorithm>
#include <cstdio>
#include <string_view>

#include "actors/error_message.hpp"
#include "actors/gateway_handlers.hpp"
#include "gateway/anthropic/anthropic_request_json.hpp"
#include "gateway/generation_limits.hpp"

namespace troupe::gateway_handlers {
namespace {

// The stored conversation of a Responses turn: its messages and the reply as an assistant
// message, in the chat form a next turn's prompt is rendered from.
nlohmann::ordered_json conversation_after(const responses_turn& turn, const reply_summary& reply) {
  nlohmann::ordered_json conversation = turn.conversation;
  nlohmann::ordered_json m{{"role", "assistant"}, {"content", reply.text}};
  if (!reply.reasoning.empty()) m["reasoning_content"] = reply.reasoning;
  if (!reply.calls.empty()) {
    m["tool_calls"] = nlohmann::ordered_json::array();
    for (const tool_call& call : reply.calls)
      m["tool_calls"].push_back(
          {{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
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

// One engine request per choice of the call, to its replica's scheduler.
void submit(self_ptr self, uint64_t call_id, const generation_options& options, int logprobs,
            const std::vector<generation_call::choice_prompt>& choices) {
  auto& st = self->state;
  auto& c = st.calls[call_id];
  const std::vector<int> stops = stop_ids(options, st.options.eos_token_ids);
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

// Admits the request (gateway/generation_limits.hpp), builds the call on a replica the
// router picks and submits it.
void start_generation(self_ptr self, const http_call_ptr& http, const std::string& endpoint, prepared_generation& g) {
  auto& st = self->state;
  const gateway_options& o = st.options;
  const generation_options& options = g.options;
  const generation_limits limits{o.vocab_size, o.max_model_len, o.max_pending, o.eos_token_ids};
  if (auto refused = check_generation(limits, st.by_request.size(), g.kind, options, g.prompts))
    return answer_error(self, http, endpoint, *refused);
  // n choices per prompt, in the order OpenAI numbers them.
  std::vector<generation_call::choice_prompt> choices;
  for (const auto& p : g.prompts)
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
  const std::string id = (g.kind == api_kind::chat ? "chatcmpl-" : "cmpl-") + std::to_string(call_id);
  c.generation = std::make_unique<generation_call>(g.kind, id, options, g.logprobs, g.echo, choices, st.tok, g.parsing,
                                                   std::move(g.dialect));
  if (g.turn) st.call_of_response[g.turn->id] = call_id;
  c.turn = std::move(g.turn);
  http->responder->on_close(
      [self, call_id] { caf::anon_send(caf::actor_cast<gateway_actor>(self), closed_atom::value, call_id); });
  if (options.stream) {
    http->responder->start_stream(200, "text/event-stream", {{"Cache-Control", "no-cache"}});
    if (auto first = c.generation->stream_start(); !first.empty()) http->responder->write(first);
  }
  submit(self, call_id, options, g.logprobs, choices);
}

// What a preparer made of a request: the engine's work, or its answer.
void prepared(self_ptr self, const http_call_ptr& http, const std::string& endpoint, prepared_request& p) {
  if (auto* e = std::get_if<api_error>(&p.what)) return answer_error(self, http, endpoint, *e);
  if (auto* t = std::get_if<tokenize_answer>(&p.what)) return answer(self, http, endpoint, 200, std::move(t->json));
  start_generation(self, http, endpoint, std::get<prepared_generation>(p.what));
}

api_error response_not_found(const std::string& id) {
  return {404, "Response with id '" + id + "' not found.", "invalid_request_error", {}, "response_not_found"};
}

}  // namespace

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

void handler_threw(self_ptr self, const http_call_ptr& http, const char* what, const std::exception& e) {
  std::fprintf(stderr, "troupe: gateway: %s failed: %s\n", what, e.what());
  std::vector<uint64_t> of_request;
  for (const auto& [id, c] : self->state.calls)
    if (c.http == http) of_request.push_back(id);
  for (uint64_t id : of_request) forget_call(self, id, 500);
  http->responder->fail(500, internal_error(std::string("internal error: ") + e.what()).to_json());
}

// The request goes to the preparer with the least work queued; the gateway takes other
// requests meanwhile. Requests being prepared count as pending.
void prepare(self_ptr self, const http_call_ptr& http, const std::string& endpoint) {
  auto& st = self->state;
  if (st.preparing + st.by_request.size() >= st.options.max_pending)
    return answer_error(self, http, endpoint, too_many_requests());
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

// GET /v1/responses/{id}: a stored response; DELETE: it is forgotten.
void stored_response(self_ptr self, const http_call_ptr& http, const std::string& endpoint) {
  auto& st = self->state;
  const auto& req = http->request;
  const std::string id = req.path.substr(std::string_view("/v1/responses/").size());
  if (req.method == "DELETE") {
    if (!st.responses->erase(id)) return answer_error(self, http, endpoint, response_not_found(id));
    return answer(self, http, endpoint, 200,
                  nlohmann::json{{"id", id}, {"object", "response"}, {"deleted", true}}.dump());
  }
  auto stored = st.responses->get(id);
  if (!stored) return answer_error(self, http, endpoint, response_not_found(id));
  answer(self, http, endpoint, 200, stored->response);
}

// POST /v1/responses/{id}/cancel: a running response ends where it stands, with status
// "cancelled".
void cancel_response(self_ptr self, const http_call_ptr& http, const std::string& endpoint) {
  auto& st = self->state;
  const std::string& path = http->request.path;
  constexpr std::string_view prefix = "/v1/responses/", suffix = "/cancel";
  const std::string id = path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
  auto running = st.call_of_response.find(id);
  if (running == st.call_of_response.end()) {
    if (st.responses->get(id))
      return answer_error(self, http, endpoint,
                          bad_param("response_id", "Response with id '" + id + "' has already finished."));
    return answer_error(self, http, endpoint, response_not_found(id));
  }
  const uint64_t call_id = running->second;
  auto& c = st.calls[call_id];
  for (request_id r : c.requests) self->send(st.replicas[c.replica].scheduler, cancel_atom::value, r);
  c.generation->cancel();
  answer(self, http, endpoint, 200, finish_call(self, call_id, true));
}

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

}  // namespace troupe::gateway_handlers
