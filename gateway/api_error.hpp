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

}  // namespace troupe
