#pragma once
// Warm-up: requests the gateway sends itself once the engine is ready and before /health
// answers 200, so that the first real traffic does not pay the one-time costs (pages of
// memory-mapped weights touched for the first time, the CUDA graph of each batch size
// captured on first use, the tokenizer's and the chat template's first runs).
#include <functional>
#include <string>
#include <vector>

#include "gateway/http/http_request.hpp"
#include "gateway/http/http_responder.hpp"

namespace troupe::http {

// `n` streamed requests that are meant to run at once: request i generates 8 * (i + 1)
// tokens (ignore_eos), so as they finish one by one the batch runs every size from n down
// to 1. Chat completions when the model has a chat template, completions otherwise; with
// the API key's Authorization header when there is one.
std::vector<request> warmup_requests(int n, const std::string& model, bool chat, const std::string& api_key);

// Collects a warm-up response and calls `done` once with its status when it ends.
class warmup_responder final : public responder {
 public:
  explicit warmup_responder(std::function<void(int status, const std::string& body)> done);
  void respond(int status, std::string content_type, std::string body, std::vector<header> extra) override;
  void start_stream(int status, std::string content_type, std::vector<header> extra) override;
  void write(std::string chunk) override;
  void end() override;
  void fail(int status, std::string error_body) override;
  bool closed() const override { return false; }
  void on_close(std::function<void()>) override {}

 private:
  std::function<void(int, const std::string&)> done_;
  int status_ = 0;  // once a stream began
  bool ended_ = false;
  std::string body_;
};

}  // namespace troupe::http
