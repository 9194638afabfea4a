#pragma once
// What the files of the gateway actor share. gateway.cpp holds the actor's behavior and
// warm-up; gateway_routes.cpp the route table and the keys; gateway_calls.cpp the
// generation calls, from preparation to their last byte; gateway_admin.cpp /health,
// /metrics, /admin/* and the replicas' lifecycle. Every function runs on the gateway
// actor's thread, over its state.
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "actors/gateway.hpp"
#include "gateway/api_error.hpp"

namespace troupe::gateway_handlers {

using self_ptr = gateway_actor::stateful_pointer<gateway_state>;
using clock_type = std::chrono::steady_clock;
inline constexpr const char* json_type = "application/json";

inline double seconds(clock_type::duration d) { return std::chrono::duration<double>(d).count(); }

// Answers the request and counts it in /metrics under `endpoint`, a route's name, never the
// raw path (so that unknown paths cannot add series). 429 and 503 ask for a retry in 1 s.
void answer(self_ptr self, const http_call_ptr& http, const std::string& endpoint, int status, std::string body,
            const char* type = json_type);

// Anthropic's clients read their API's error shape; everyone else OpenAI's.
bool anthropic_path(const std::string& path);
void answer_error(self_ptr self, const http_call_ptr& http, const std::string& endpoint, const api_error& e);

// What a route runs once the key and the method are checked; `endpoint` is the route's name.
using handler = void (*)(self_ptr self, const http_call_ptr& http, const std::string& endpoint);

// gateway_routes.cpp: checks the key, then runs the route of the path and method.
void route(self_ptr self, const http_call_ptr& http);

// gateway_calls.cpp
void prepare(self_ptr self, const http_call_ptr& http, const std::string& endpoint);          // generation, /tokenize
void stored_response(self_ptr self, const http_call_ptr& http, const std::string& endpoint);  // GET, DELETE
void cancel_response(self_ptr self, const http_call_ptr& http, const std::string& endpoint);
// New tokens (or the end) of choice `index` of a call.
void on_tokens(self_ptr self, uint64_t call_id, int index, const token_event& ev);
// The call's requests are cancelled and it is forgotten, unanswered here: its client left
// (`status` 499) or the caller answers it.
void forget_call(self_ptr self, uint64_t call_id, int status);
// The 500 of a handler that threw, for `contained`.
void handler_threw(self_ptr self, const http_call_ptr& http, const char* what, const std::exception& e);

// A handler that throws has met a bug: its request fails with a 500 (an error event if its
// stream began), the gateway goes on.
template <class Work>
void contained(self_ptr self, const http_call_ptr& http, const char* what, Work work) {
  try {
    work();
  } catch (const std::exception& e) {
    handler_threw(self, http, what, e);
  }
}

// gateway_admin.cpp
void health(self_ptr self, const http_call_ptr& http, const std::string& endpoint);
void metrics_page(self_ptr self, const http_call_ptr& http, const std::string& endpoint);
void admin_status(self_ptr self, const http_call_ptr& http, const std::string& endpoint);
void admin_traffic(self_ptr self, const http_call_ptr& http, const std::string& endpoint);
void list_replicas(self_ptr self, const http_call_ptr& http, const std::string& endpoint);
void change_replica(self_ptr self, const http_call_ptr& http, const std::string& endpoint);
// Whether every component of the replica reported ready (and there is one).
bool replica_ready(const replica_endpoint& r, const std::vector<component_health>& parts);
// A replica being removed whose last call has ended is stopped.
void stop_if_drained(self_ptr self, size_t r);

}  // namespace troupe::gateway_handlers
