#include "gateway/openai_endpoints.hpp"

#include <chrono>

#include <nlohmann/json.hpp>

#include "gateway/json_body.hpp"

namespace troupe {
namespace {

using json = nlohmann::ordered_json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

result<json, api_error> object_body(std::string_view body) {
  auto parsed = parse_json_object(body);
  if (!parsed) return parsed.err();
  json& j = *parsed;
  if (!j.contains("model") || !j["model"].is_string()) return bad_param("model", "model is required and must be a string");
  return j;
}

}  // namespace

std::string models_json(const std::string& served_name, int max_model_len) {
  const auto created = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch()).count();
  return dump({{"object", "list"},
               {"data", json::array({{{"id", served_name}, {"object", "model"}, {"created", created},
                                      {"owned_by", "troupe"}, {"root", served_name}, {"parent", nullptr},
                                      {"max_model_len", max_model_len}}})}});
}

std::string version_json() { return dump({{"version", TROUPE_VERSION}}); }

result<tokenize_request, api_error> parse_tokenize_request(const json& body) {
  if (!body.contains("model") || !body["model"].is_string()) return bad_param("model", "model is required and must be a string");
  tokenize_request r{body["model"].get<std::string>(), {}, true};
  if (!body.contains("prompt") || !body["prompt"].is_string()) return bad_param("prompt", "prompt is required and must be a string");
  r.prompt = body["prompt"].get<std::string>();
  if (body.contains("add_special_tokens")) {
    if (!body["add_special_tokens"].is_boolean()) return bad_param("add_special_tokens", "add_special_tokens must be true or false");
    r.add_special_tokens = body["add_special_tokens"].get<bool>();
  }
  return r;
}

std::string tokenize_json(const std::vector<int>& tokens, int max_model_len) {
  return dump({{"tokens", tokens}, {"count", tokens.size()}, {"max_model_len", max_model_len}});
}

result<detokenize_request, api_error> parse_detokenize_request(std::string_view body) {
  auto j = object_body(body);
  if (!j) return j.err();
  auto tokens = token_ids((*j)["tokens"], "tokens");
  if (!tokens) return tokens.err();
  return detokenize_request{(*j)["model"].get<std::string>(), std::move(*tokens)};
}

std::string detokenize_json(const std::string& text) { return dump({{"prompt", text}}); }

}  // namespace troupe
