#pragma once
// An error answered to an OpenAI client: {"error":{"message","type","param","code"}}.
#include <string>

namespace troupe {

struct api_error {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the offending request field, empty when none
  std::string code;   // empty when none

  std::string to_json() const;
};

// A request naming a model this server does not serve, as OpenAI answers it.
inline api_error unknown_model(const std::string& name) {
  return {404, "The model `" + name + "` does not exist.", "invalid_request_error", "model", "model_not_found"};
}

inline api_error bad_param(std::string param, std::string message) {
  return {400, std::move(message), "invalid_request_error", std::move(param), {}};
}

// A 400 that names no field.
inline api_error bad_request(std::string message) { return {400, std::move(message), "invalid_request_error", {}, {}}; }

// `hint`, when given, names the endpoints nearby.
inline api_error no_endpoint(const std::string& path, const std::string& hint = {}) {
  return {404, "no endpoint " + path + (hint.empty() ? "" : " (" + hint + ")"), "invalid_request_error", {}, {}};
}

inline api_error method_not_allowed(const std::string& method, const std::string& path) {
  return {405, "method " + method + " is not allowed on " + path, "invalid_request_error", {}, {}};
}

// The server cannot take the request now; the message says why.
inline api_error service_unavailable(std::string message) {
  return {503, std::move(message), "service_unavailable", {}, {}};
}

// Too many requests are queued: the client should retry later.
inline api_error too_many_requests() {
  return {429, "the server has too many requests queued; retry later", "rate_limit_error", {}, {}};
}

// A failure inside the server.
inline api_error internal_error(std::string message) {
  return {500, std::move(message), "internal_server_error", {}, {}};
}

}  // namespace troupe
