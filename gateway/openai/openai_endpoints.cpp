#include "gateway/openai/openai_endpoints.hpp"

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
  if (!j.contains("model") || !j["model"].is_string())
    return bad_param("model", "model is required and must be a string");
  return j;
}

json model_object(const std::string& served_name, int max_model_len) {
  const auto created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return {{"id", served_name},
          {"object", "model"},
          {"created", created},
          {"owned_by", "troupe"},
          {"root", served_name},
          {"parent", nullptr},
          {"max_model_len", max_model_len}};
}

}  // namespace

std::string models_json(const std::vector<std::string>& served_names, int max_model_len) {
  json data = json::array();
  for (const std::string& name : served_names) data.push_back(model_object(name, max_model_len));
  return dump({{"object", "list"}, {"data", std::move(data)}});
}

std::string model_json(const std::string& served_name, int max_model_len) {
  return dump(model_object(served_name, max_model_len));
}

std::optional<std::string> model_id_of_path(std::string_view path) {
  constexpr std::string_view prefix = "/v1/models/";
  if (path.substr(0, prefix.size()) != prefix) return std::nullopt;
  auto hex = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
  };
  std::string id;
  for (size_t i = prefix.size(); i < path.size(); ++i) {
    if (path[i] == '%' && i + 2 < path.size() && hex(path[i + 1]) >= 0 && hex(path[i + 2]) >= 0) {
      id += char(hex(path[i + 1]) * 16 + hex(path[i + 2]));
      i += 2;
    } else {
      id += path[i];
    }
  }
  return id;
}

std::string version_json() { return dump({{"version", TROUPE_VERSION}}); }

result<tokenize_request, api_error> parse_tokenize_request(const json& body) {
  if (!body.contains("model") || !body["model"].is_string())
    return bad_param("model", "model is required and must be a string");
  tokenize_request r{body["model"].get<std::string>(), {}, true};
  if (!body.contains("prompt") || !body["prompt"].is_string())
    return bad_param("prompt", "prompt is required and must be a string");
  r.prompt = body["prompt"].get<std::string>();
  if (body.contains("add_special_tokens")) {
    if (!body["add_special_tokens"].is_boolean())
      return bad_param("add_special_tokens", "add_special_tokens must be true or false");
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
