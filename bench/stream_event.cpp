#include "bench/stream_event.hpp"

#include <nlohmann/json.hpp>

namespace troupe::bench {

using json = nlohmann::json;

static std::string error_message(const json& e) {
  if (e.is_object() && e.contains("message") && e["message"].is_string()) return e["message"].get<std::string>();
  return e.dump();
}

result<stream_event> parse_stream_event(std::string_view data, api_kind kind) {
  stream_event ev;
  if (data == "[DONE]") {
    ev.done = true;
    return ev;
  }
  const json j = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return error{"a stream event is not a JSON object: " + std::string(data.substr(0, 200))};
  // OpenAI and troupe send {"error": {...}}; older vLLM sent {"object": "error", ...}.
  if (auto e = j.find("error"); e != j.end() && !e->is_null())
    ev.error = error_message(*e);
  else if (j.value("object", "") == "error")
    ev.error = error_message(j);
  if (auto c = j.find("choices"); c != j.end() && c->is_array() && !c->empty()) {
    const json& choice = (*c)[0];
    const json* text = nullptr;
    if (kind == api_kind::chat) {
      if (auto d = choice.find("delta"); d != choice.end() && d->is_object())
        if (auto t = d->find("content"); t != d->end()) text = &*t;
    } else if (auto t = choice.find("text"); t != choice.end()) {
      text = &*t;
    }
    if (text && text->is_string()) ev.content = text->get<std::string>();
  }
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    ev.prompt_tokens = u->value("prompt_tokens", -1);
    ev.completion_tokens = u->value("completion_tokens", -1);
  }
  return ev;
}

}  // namespace troupe::bench
