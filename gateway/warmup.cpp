#include "gateway/warmup.hpp"

#include <nlohmann/json.hpp>

#include "gateway/http/response_format.hpp"

namespace troupe::http {

std::vector<request> warmup_requests(int n, const std::string& model, bool chat, const std::string& api_key) {
  std::vector<request> out;
  for (int i = 0; i < n; ++i) {
    nlohmann::ordered_json body{{"model", model}};
    const std::string text = "Warm-up request " + std::to_string(i + 1) + " of " + std::to_string(n) + ".";
    if (chat)
      body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", text}}});
    else
      body["prompt"] = text;
    body["max_tokens"] = 8 * (i + 1);
    body["ignore_eos"] = true;
    body["temperature"] = 0;
    body["stream"] = true;
    request r;
    r.method = "POST";
    r.path = chat ? "/v1/chat/completions" : "/v1/completions";
    r.headers.push_back({"content-type", "application/json"});
    if (!api_key.empty()) r.headers.push_back({"authorization", "Bearer " + api_key});
    r.body = body.dump();
    out.push_back(std::move(r));
  }
  return out;
}

warmup_responder::warmup_responder(std::function<void(int, const std::string&)> done) : done_(std::move(done)) {}

void warmup_responder::respond(int status, std::string, std::string body, std::vector<header>) {
  ended_ = true;
  done_(status, body);
}

void warmup_responder::start_stream(int status, std::string, std::vector<header>) { status_ = status; }

void warmup_responder::write(std::string chunk) { body_ += chunk; }

// A stream that failed after it began ends with an error event: the warm-up counts it as
// failed, with the event as its body.
void warmup_responder::end() {
  ended_ = true;
  done_(body_.find("data: {\"error\"") == std::string::npos ? status_ : 500, body_);
}

void warmup_responder::fail(int status, std::string error_body) {
  if (ended_) return;
  if (status_ == 0) return respond(status, "application/json", std::move(error_body), {});
  body_ += sse_error_end(error_body);
  end();
}

}  // namespace troupe::http
