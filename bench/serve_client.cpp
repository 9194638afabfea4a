#include "bench/serve_client.hpp"

#include <chrono>

#include <nlohmann/json.hpp>

#include "bench/sse_reader.hpp"

namespace troupe::bench {
namespace {

using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;

double seconds(clock_type::duration d) { return std::chrono::duration<double>(d).count(); }

std::string auth_header(const std::string& api_key) {
  return api_key.empty() ? "" : "Authorization: Bearer " + api_key + "\r\n";
}

// The message of an OpenAI error body, else the start of the body as it is.
std::string error_summary(int status, const std::string& body) {
  auto ev = parse_stream_event(body, api_kind::completions);
  const std::string text = ev && !ev->error.empty() ? ev->error : body.substr(0, 200);
  return "HTTP " + std::to_string(status) + (text.empty() ? "" : ": " + text);
}

}  // namespace

std::string request_body(const request_spec& spec, const bench_prompt& prompt) {
  json j{{"model", spec.model},
         {"stream", true},
         {"stream_options", {{"include_usage", true}}},
         {"temperature", spec.temperature}};
  if (prompt.seed >= 0) j["seed"] = prompt.seed;
  if (spec.kind == api_kind::chat) {
    j["messages"] = json::array({{{"role", "user"}, {"content", prompt.text}}});
    j["max_completion_tokens"] = prompt.output_len;
  } else {
    j["prompt"] = prompt.ids;
    j["max_tokens"] = prompt.output_len;
  }
  if (spec.ignore_eos) j["ignore_eos"] = true;  // a vLLM extension, so only sent when asked for
  return j.dump();
}

request_outcome send_request(http_client& http, const request_spec& spec, const bench_prompt& prompt) {
  request_outcome out;
  out.prompt_tokens = prompt.input_len;
  int usage_tokens = -1, chunks = 0;
  bool done = false;
  std::string stream_error, error_body;
  sse_reader sse;
  const auto start = clock_type::now();
  auto last = start;
  auto on_event = [&](std::string_view data) {
    if (!stream_error.empty()) return;  // read on to the end, so the connection stays usable
    auto ev = parse_stream_event(data, spec.kind);
    if (!ev) return void(stream_error = ev.err().message);
    if (!ev->error.empty()) return void(stream_error = "error event: " + ev->error);
    done = done || ev->done;
    if (ev->prompt_tokens >= 0) out.prompt_tokens = ev->prompt_tokens;
    if (ev->completion_tokens >= 0) usage_tokens = ev->completion_tokens;
    if (ev->content.empty()) return;
    out.text += ev->content;
    const auto now = clock_type::now();
    if (chunks++ == 0)
      out.ttft_s = seconds(now - start);
    else
      out.itl_s.push_back(seconds(now - last));
    last = now;
  };
  auto status = http.request("POST", spec.endpoint, auth_header(spec.api_key), request_body(spec, prompt),
                             [&](int status, std::string_view bytes) {
                               if (status == 200)
                                 sse.feed(bytes, on_event);
                               else if (error_body.size() < 4096)
                                 error_body.append(bytes);
                             });
  out.e2e_s = seconds(clock_type::now() - start);
  if (!status)
    out.error = status.err().message;
  else if (*status != 200)
    out.error = error_summary(*status, error_body);
  else if (!stream_error.empty())
    out.error = stream_error;
  else if (!done)
    out.error = "the stream ended without \"data: [DONE]\"";
  if (!out.error.empty()) return out;
  if (chunks == 0) out.ttft_s = out.e2e_s;
  out.output_tokens = usage_tokens >= 0 ? usage_tokens : chunks;
  out.success = true;
  return out;
}

result<std::string> first_model_id(http_client& http, const std::string& api_key) {
  std::string body;
  auto status = http.request("GET", "/v1/models", auth_header(api_key), "",
                             [&](int, std::string_view bytes) { body.append(bytes); });
  if (!status) return status.err();
  if (*status != 200) return error{"GET /v1/models: " + error_summary(*status, body)};
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("data") && j["data"].is_array() && !j["data"].empty() && j["data"][0].is_object() &&
      j["data"][0].contains("id") && j["data"][0]["id"].is_string())
    return j["data"][0]["id"].get<std::string>();
  return error{"GET /v1/models lists no model; name one with --model"};
}

}  // namespace troupe::bench
