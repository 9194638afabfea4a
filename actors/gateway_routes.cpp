// The gateway's routes: which key a path asks for, and a table of path, methods and handler
// that routing, the 405s and the endpoint names of /metrics all read.
#include <openssl/crypto.h>

#include <optional>
#include <string_view>

#include "actors/gateway_handlers.hpp"
#include "gateway/openai/openai_endpoints.hpp"

namespace troupe::gateway_handlers {
namespace {

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

void version(self_ptr self, const http_call_ptr& http, const std::string& endpoint) {
  answer(self, http, endpoint, 200, version_json());
}

void models(self_ptr self, const http_call_ptr& http, const std::string& endpoint) {
  const auto& o = self->state.options;
  answer(self, http, endpoint, 200, models_json(o.served_model_names, o.max_model_len));
}

void model(self_ptr self, const http_call_ptr& http, const std::string& endpoint) {
  const auto& o = self->state.options;
  const std::string id = model_id_of_path(http->request.path).value();
  if (!serves_model(o.served_model_names, id)) return answer_error(self, http, endpoint, unknown_model(id));
  answer(self, http, endpoint, 200, model_json(id, o.max_model_len));
}

void detokenize(self_ptr self, const http_call_ptr& http, const std::string& endpoint) {
  auto& st = self->state;
  auto r = parse_detokenize_request(http->request.body);
  if (!r) return answer_error(self, http, endpoint, r.err());
  if (!serves_model(st.options.served_model_names, r->model))
    return answer_error(self, http, endpoint, unknown_model(r->model));
  for (int id : r->tokens)
    if (id < 0 || id >= st.tok->vocab_size())
      return answer_error(self, http, endpoint,
                          bad_param("tokens", "token id " + std::to_string(id) + " is outside the vocabulary"));
  answer(self, http, endpoint, 200, detokenize_json(st.tok->decode(r->tokens)));
}

void not_found(self_ptr self, const http_call_ptr& http, const std::string& endpoint) {
  answer_error(self, http, endpoint, no_endpoint(http->request.path));
}

// The methods a route takes; HEAD goes with GET.
enum methods : unsigned { get = 1, post = 2, del = 4, any = 8 };

bool takes(unsigned allowed, const std::string& method) {
  if (allowed & any) return true;
  if (method == "GET" || method == "HEAD") return allowed & get;
  if (method == "POST") return allowed & post;
  if (method == "DELETE") return allowed & del;
  return false;
}

struct route_entry {
  // The path; "{id}" in it stands for one path segment (not empty, no '/'), and a final
  // '*' for anything after what comes before it.
  std::string_view path;
  unsigned methods;
  handler handle;
  std::string_view name = {};  // what /metrics counts it under; empty: `path`
};

// First match wins.
const route_entry routes[] = {
    {"/health", get, health},
    {"/metrics", get, metrics_page},
    {"/version", get, version},
    {"/v1/models", get, models},
    {"/v1/models/*", get, model, "/v1/models"},
    {"/v1/completions", post, prepare},
    {"/v1/chat/completions", post, prepare},
    {"/v1/responses", post, prepare},
    {"/v1/responses/{id}", get | del, stored_response},
    {"/v1/responses/{id}/cancel", post, cancel_response, "/v1/responses/{id}"},
    {"/v1/responses/*", any, not_found, "/v1/responses/{id}"},
    {"/v1/messages", post, prepare},
    {"/v1/messages/count_tokens", post, prepare},
    {"/tokenize", post, prepare},
    {"/detokenize", post, detokenize},
    {"/admin/status", get, admin_status},
    {"/admin/traffic", get | post, admin_traffic},
    {"/admin/replicas", get, list_replicas},
    {"/admin/replicas/*", post, change_replica, "/admin/replicas"},
};

bool matches(std::string_view pattern, std::string_view path) {
  if (pattern.ends_with('*')) return path.starts_with(pattern.substr(0, pattern.size() - 1));
  const size_t at = pattern.find("{id}");
  if (at == std::string_view::npos) return path == pattern;
  const std::string_view head = pattern.substr(0, at), tail = pattern.substr(at + 4);
  if (path.size() <= head.size() + tail.size() || !path.starts_with(head) || !path.ends_with(tail)) return false;
  return path.substr(head.size(), path.size() - head.size() - tail.size()).find('/') == std::string_view::npos;
}

const route_entry* route_of(std::string_view path) {
  for (const auto& r : routes)
    if (matches(r.path, path)) return &r;
  return nullptr;
}

// The endpoint a request is counted under in /metrics: a route, never the raw path, so
// that unknown paths cannot add series.
std::string endpoint_label(const route_entry* r) {
  if (!r) return "other";
  return std::string(r->name.empty() ? r->path : r->name);
}

}  // namespace

void route(self_ptr self, const http_call_ptr& http) {
  const auto& req = http->request;
  const route_entry* r = route_of(req.path);
  const std::string endpoint = endpoint_label(r);
  if (!authorized(self->state.options, req))
    return answer_error(self, http, endpoint,
                        {401, "Incorrect API key provided.", "invalid_request_error", {}, "invalid_api_key"});
  if (!r) return not_found(self, http, endpoint);
  if (!takes(r->methods, req.method))
    return answer_error(self, http, endpoint, method_not_allowed(req.method, req.path));
  r->handle(self, http, endpoint);
}

}  // namespace troupe::gateway_handlers
