#pragma once
// The responder handed to the handler with each request. Callers on any thread; their
// calls travel to the loop thread through the inbox and reach the connection if it is
// still there and still answering this request.
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gateway/http/http_responder.hpp"
#include "gateway/http/loop_inbox.hpp"

namespace troupe::http {

class http_connection;

class connection_responder final : public responder, public std::enable_shared_from_this<connection_responder> {
 public:
  connection_responder(std::shared_ptr<loop_inbox> inbox, std::weak_ptr<http_connection> connection);

  void respond(int status, std::string content_type, std::string body, std::vector<header> extra) override;
  void start_stream(int status, std::string content_type, std::vector<header> extra) override;
  void write(std::string chunk) override;
  void end() override;
  void fail(int status, std::string error_body) override;
  bool closed() const override { return closed_; }
  void on_close(std::function<void()> callback) override;

  // Loop thread: the response is over, because it ended or because the client went away.
  void settle(bool client_gone);

 private:
  enum phase { fresh, streaming, done };

  void advance(phase from, phase to, const char* misuse);
  template <class Work>
  void post(Work work);

  std::shared_ptr<loop_inbox> inbox_;
  std::weak_ptr<http_connection> connection_;
  std::atomic<phase> phase_{fresh};  // as the caller sees it, before the loop does
  std::atomic<bool> closed_{false};
  // Loop thread only.
  bool settled_ = false;
  std::function<void()> on_close_;
};

}  // namespace troupe::http
