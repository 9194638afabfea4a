#pragma once
// A handler that keeps each request and its responder for the test thread to answer,
// as the gateway does from its actor threads.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "gateway/http/http_server.hpp"

namespace troupe::test {

struct pending_request {
  http::request request;
  std::shared_ptr<http::responder> responder;
};

class pending_requests {
 public:
  http::handler handler() {
    return [this](http::request r, std::shared_ptr<http::responder> w) {
      std::lock_guard lock(mutex_);
      queue_.push_back({std::move(r), std::move(w)});
      arrived_.notify_all();
    };
  }

  // The next request to arrive; fails the test after 5 s.
  pending_request next() {
    auto p = wait_next();
    BOOST_REQUIRE_MESSAGE(p, "no request reached the handler");
    return std::move(*p);
  }

  // The same without Boost.Test, which other threads must not use: nothing after 5 s.
  std::optional<pending_request> wait_next() {
    std::unique_lock lock(mutex_);
    if (!arrived_.wait_for(lock, std::chrono::seconds(5), [&] { return !queue_.empty(); })) return {};
    pending_request p = std::move(queue_.front());
    queue_.pop_front();
    return p;
  }

 private:
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<pending_request> queue_;
};

// Answers on the loop thread: "METHOD path?query\n" then the body.
inline void echo(http::request r, std::shared_ptr<http::responder> w) {
  std::string text = r.method + " " + r.path + "?" + r.query + "\n" + r.body;
  std::vector<http::header> extra;
  if (auto v = r.header_value("x-echo"); !v.empty()) extra.push_back({"X-Echo", std::string(v)});
  w->respond(200, "text/plain", std::move(text), std::move(extra));
}

inline std::unique_ptr<http::server> start_server(http::handler h, http::server_options o = {}) {
  auto started = http::server::start(std::move(o), std::move(h));
  BOOST_REQUIRE_MESSAGE(started.ok(), (started.ok() ? "" : started.err().message));
  return std::move(started).value();
}

}  // namespace troupe::test
