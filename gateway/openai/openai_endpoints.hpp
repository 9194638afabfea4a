#pragma once
// JSON of the small endpoints: /v1/models, /version, /tokenize, /detokenize.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.hpp"
#include "gateway/api_error.hpp"

namespace troupe {

std::string models_json(const std::vector<std::string>& served_names, int max_model_len);
// GET /v1/models/{id} of the served model (the SDKs' models.retrieve).
std::string model_json(const std::string& served_name, int max_model_len);
// The id of a /v1/models/{id} path, percent-decoded (SDKs encode "org/name" as
// "org%2Fname"); none for another path.
std::optional<std::string> model_id_of_path(std::string_view path);
std::string version_json();

struct tokenize_request {
  std::string model;
  std::string prompt;  // when given as text
  bool add_special_tokens = true;
};
// A /tokenize body of the text form ({"prompt": ...}; the chat form, {"messages": ...}, is a
// chat request), already read as a JSON object (gateway/json_body.hpp).
result<tokenize_request, api_error> parse_tokenize_request(const nlohmann::ordered_json& body);
std::string tokenize_json(const std::vector<int>& tokens, int max_model_len);

struct detokenize_request {
  std::string model;
  std::vector<int> tokens;
};
result<detokenize_request, api_error> parse_detokenize_request(std::string_view body);
std::string detokenize_json(const std::string& text);

}  // namespace troupe
