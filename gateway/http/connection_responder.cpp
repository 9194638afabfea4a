#include "gateway/http/connection_responder.hpp"

#include <utility>

#include "base/check.hpp"
#include "gateway/http/http_connection.hpp"
#include "gateway/http/response_format.hpp"

namespace troupe::http {

namespace {

void check_head(int status, const std::string& content_type, const std::vector<header>& extra) {
  TROUPE_CHECK(status >= 200 && status <= 599, "response status outside 200..599");
  TROUPE_CHECK(content_type.find_first_of("\r\n") == std::string::npos, "line break in a content type");
  for (const header& h : extra) TROUPE_CHECK(valid_header(h), "response header not sendable as it is");
}

}  // namespace

connection_responder::connection_responder(std::shared_ptr<loop_inbox> inbox, std::weak_ptr<http_connection> connection)
    : inbox_(std::move(inbox)), connection_(std::move(connection)) {}

void connection_responder::respond(int status, std::string content_type, std::string body, std::vector<header> extra) {
  check_head(status, content_type, extra);
  advance(fresh, done, "respond() on a response that already began");
  post([this, status, content_type = std::move(content_type), body = std::move(body), extra = std::move(extra)](
           http_connection& c) mutable { c.respond(this, status, content_type, std::move(body), extra); });
}

void connection_responder::start_stream(int status, std::string content_type, std::vector<header> extra) {
  check_head(status, content_type, extra);
  advance(fresh, streaming, "start_stream() on a response that already began");
  post([this, status, content_type = std::move(content_type), extra = std::move(extra)](http_connection& c) {
    c.start_stream(this, status, content_type, extra);
  });
}

void connection_responder::write(std::string chunk) {
  TROUPE_CHECK(phase_ == streaming, "write() outside a started stream");
  post([this, chunk = std::move(chunk)](http_connection& c) mutable { c.write(this, std::move(chunk)); });
}

void connection_responder::end() {
  advance(streaming, done, "end() outside a started stream");
  post([this](http_connection& c) { c.end(this); });
}

void connection_responder::fail(int status, std::string error_body) {
  phase was = fresh;
  if (phase_.compare_exchange_strong(was, done)) {
    post([this, status, body = std::move(error_body)](http_connection& c) mutable {
      c.respond(this, status, "application/json", std::move(body), {});
    });
  } else if (was == streaming && phase_.compare_exchange_strong(was, done)) {
    post([this, body = std::move(error_body)](http_connection& c) mutable {
      c.write(this, sse_error_end(body));
      c.end(this);
    });
  }
}

void connection_responder::on_close(std::function<void()> callback) {
  inbox_->post([self = shared_from_this(), callback = std::move(callback)]() mutable {
    if (!self->settled_) {
      self->on_close_ = std::move(callback);
    } else if (self->closed_ && self->phase_ != done) {
      callback();  // the client left before this callback arrived
    }
  });
}

void connection_responder::settle(bool client_gone) {
  if (std::exchange(settled_, true)) return;
  std::function<void()> callback = std::move(on_close_);
  on_close_ = nullptr;  // it may hold this responder: break the cycle
  if (!client_gone) return;
  closed_ = true;
  if (callback && phase_ != done) callback();
}

void connection_responder::advance(phase from, phase to, const char* misuse) {
  phase expected = from;
  TROUPE_CHECK(phase_.compare_exchange_strong(expected, to), misuse);
}

template <class Work>
void connection_responder::post(Work work) {
  inbox_->post([self = shared_from_this(), work = std::move(work)]() mutable {
    if (auto c = self->connection_.lock()) work(*c);
  });
}

}  // namespace troupe::http
