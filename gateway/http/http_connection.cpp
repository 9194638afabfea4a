#include "gateway/http/http_connection.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <cstdio>
#include <memory>
#include <utility>

#include "base/check.hpp"
#include "gateway/http/connection_responder.hpp"
#include "gateway/http/response_format.hpp"

namespace troupe::http {

namespace {

// A closing connection waits this long for the client to close its side: closing while
// request bytes are still arriving would reset the connection and lose the last response.
constexpr std::chrono::milliseconds linger{2000};

struct write_req {
  uv_write_t req;
  std::string bytes;
};

uv_stream_t* as_stream(uv_tcp_t* tcp) { return reinterpret_cast<uv_stream_t*>(tcp); }

template <class T>
uv_handle_t* as_handle(T* h) {
  return reinterpret_cast<uv_handle_t*>(h);
}

http_connection& owner(void* data) { return *static_cast<http_connection*>(data); }

}  // namespace

http_connection::http_connection(connection_host& host)
    : host_(host), parser_(host.options.max_header_bytes, host.options.max_body_bytes) {
  TROUPE_CHECK(uv_tcp_init(host.loop, &tcp_) == 0, "uv_tcp_init");
  TROUPE_CHECK(uv_timer_init(host.loop, &timer_) == 0, "uv_timer_init");
  TROUPE_CHECK(uv_timer_init(host.loop, &send_timer_) == 0, "uv_timer_init");
  tcp_.data = this;
  timer_.data = this;
  send_timer_.data = this;
}

bool http_connection::accept(uv_stream_t* listener) {
  if (uv_accept(listener, as_stream(&tcp_)) != 0) return false;
  uv_tcp_nodelay(&tcp_, 1);        // streamed tokens leave as soon as they are written
  uv_tcp_keepalive(&tcp_, 1, 60);  // a client that vanished without a FIN is noticed too
  // The kernel keeps at most this much of a response that the client's window does not
  // let out (without it, send buffers grow to megabytes): what a client that stopped
  // reading leaves unsent then waits here, where the send timeout sees it.
  uv_os_fd_t fd;
  if (uv_fileno(as_handle(&tcp_), &fd) == 0) {
    const int unsent = 16 << 10;
    setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &unsent, sizeof unsent);
  }
  set_reading(true);
  start_timer(timer_use::awaiting_request, host_.options.header_timeout);
  return true;
}

void http_connection::respond(const connection_responder* from, int status, std::string_view content_type,
                              std::string body, const std::vector<header>& extra) {
  if (!answers(from)) return;
  keep_alive_ = keep_alive_ && !host_.draining;
  std::string bytes = format_head(status, content_type, framing::length, body.size(), keep_alive_, extra);
  if (!head_) bytes += body;
  send(std::move(bytes));
  finish_response();
}

void http_connection::start_stream(const connection_responder* from, int status, std::string_view content_type,
                                   const std::vector<header>& extra) {
  if (!answers(from)) return;
  keep_alive_ = keep_alive_ && !host_.draining;
  framing f = http_1_0_ ? framing::until_close : framing::chunked;
  send(format_head(status, content_type, f, 0, keep_alive_, extra));
  streaming_ = true;
}

void http_connection::write(const connection_responder* from, std::string chunk) {
  if (!answers(from) || !streaming_ || head_) return;
  send(http_1_0_ ? std::move(chunk) : format_chunk(chunk));
  if (queued_bytes_ > host_.options.max_write_queue_bytes)
    drop_stalled_client("left more than " + std::to_string(host_.options.max_write_queue_bytes) + " bytes unread");
}

void http_connection::end(const connection_responder* from) {
  if (!answers(from) || !streaming_) return;
  if (!head_ && !http_1_0_) send(std::string(last_chunk));
  finish_response();
}

bool http_connection::busy() const { return !closed_ && (current_ || queued_bytes_ > 0); }

void http_connection::drain() {
  if (!current_) close_gracefully();
}

void http_connection::close(bool reset) {
  if (closed_) return;
  closed_ = true;
  if (current_) std::exchange(current_, nullptr)->settle(true);
  if (!reset || uv_tcp_close_reset(&tcp_, on_handle_closed) != 0) uv_close(as_handle(&tcp_), on_handle_closed);
  uv_close(as_handle(&timer_), on_handle_closed);
  uv_close(as_handle(&send_timer_), on_handle_closed);
}

void http_connection::on_alloc(uv_handle_t* handle, size_t, uv_buf_t* buf) {
  auto& buffer = owner(handle->data).host_.read_buffer;
  *buf = uv_buf_init(buffer.data(), buffer.size());
}

void http_connection::on_read(uv_stream_t* stream, ssize_t n, const uv_buf_t* buf) {
  http_connection& c = owner(stream->data);
  if (n > 0) {
    c.received({buf->base, size_t(n)});
  } else if (n < 0) {
    // End of stream or an error. Like Go's net/http, a half-close counts as the client
    // leaving: that is how an abandoned generation gets cancelled promptly.
    c.close();
  }
}

void http_connection::on_written(uv_write_t* req, int status) {
  std::unique_ptr<write_req> w(static_cast<write_req*>(req->data));
  http_connection& c = owner(req->handle->data);
  c.queued_bytes_ -= w->bytes.size();
  if (c.closed_) return;
  if (status < 0) return c.close();  // the client went away
  c.send_timer_running_ = false;     // it took some: the clock starts again
  c.watch_sending();
  if (c.queued_bytes_ > 0) return;
  if (c.closing_) return c.shut_down_writing();
  c.parse_input();
}

void http_connection::on_shutdown(uv_shutdown_t* req, int status) {
  std::unique_ptr<uv_shutdown_t> owned(req);
  http_connection& c = owner(req->handle->data);
  if (c.closed_) return;
  if (status < 0) return c.close();
  c.start_timer(timer_use::closing, linger);
}

void http_connection::on_timer(uv_timer_t* timer) {
  http_connection& c = owner(timer->data);
  if (c.timer_use_ == timer_use::awaiting_request && c.request_started_) return c.reject(408, "request timed out");
  c.close();  // idle, silent since it connected, or done closing
}

void http_connection::on_send_timeout(uv_timer_t* timer) {
  http_connection& c = owner(timer->data);
  c.send_timer_running_ = false;
  c.drop_stalled_client("took none of its response for " + std::to_string(c.host_.options.send_timeout.count()) +
                        " ms");
}

void http_connection::on_handle_closed(uv_handle_t* handle) {
  http_connection& c = owner(handle->data);
  if (--c.open_handles_ == 0) c.host_.closed(c);
}

void http_connection::received(std::string_view data) {
  if (closing_) return;  // what a closing client still sends is discarded
  input_.append(data);
  parse_input();
}

void http_connection::parse_input() {
  // One request at a time: the next is parsed once the last response is all written, so
  // a client that sends but never reads holds at most one response here.
  while (!current_ && !closing_ && !closed_ && queued_bytes_ == 0 && !input_.empty()) {
    if (!request_started_) {
      request_started_ = true;
      start_timer(timer_use::awaiting_request, host_.options.header_timeout);
    }
    input_.erase(0, parser_.feed(input_));
    if (parser_.failed()) return reject(parser_.error_status(), parser_.error_message());
    if (parser_.take_continue() && !parser_.complete()) send(std::string(continue_line));
    if (!parser_.complete()) break;  // all of input_ was used
    dispatch(parser_.take());
  }
  // Pipelined bytes wait in input_; past the header limit, stop reading until their turn.
  set_reading(closing_ || input_.size() <= host_.options.max_header_bytes);
}

void http_connection::dispatch(parsed_request r) {
  uv_timer_stop(&timer_);
  request_started_ = false;
  keep_alive_ = r.keep_alive && !host_.draining;
  http_1_0_ = r.http_1_0;
  head_ = r.message.method == "HEAD";
  streaming_ = false;
  current_ = std::make_shared<connection_responder>(host_.inbox, weak_from_this());
  host_.handle(std::move(r.message), current_);
}

bool http_connection::answers(const connection_responder* from) const {
  return !closed_ && current_ && current_.get() == from;
}

void http_connection::send(std::string bytes) {
  if (closed_ || bytes.empty()) return;
  auto w = std::make_unique<write_req>();
  w->bytes = std::move(bytes);
  w->req.data = w.get();
  uv_buf_t buf;
  buf.base = w->bytes.data();
  buf.len = w->bytes.size();
  if (uv_write(&w->req, as_stream(&tcp_), &buf, 1, on_written) != 0) return close();
  queued_bytes_ += w.release()->bytes.size();
  watch_sending();
}

// The send timeout runs while libuv holds bytes the kernel would not take (its buffers for
// the client are full) and stops when they are all gone; each write that completes starts
// it over.
void http_connection::watch_sending() {
  if (closed_) return;
  if (uv_stream_get_write_queue_size(as_stream(&tcp_)) == 0) {
    uv_timer_stop(&send_timer_);
    send_timer_running_ = false;
  } else if (!send_timer_running_) {
    uv_timer_start(&send_timer_, on_send_timeout, uint64_t(host_.options.send_timeout.count()), 0);
    send_timer_running_ = true;
  }
}

// A line says which client and why: an operator sees where a stream went.
void http_connection::drop_stalled_client(const std::string& why) {
  if (closed_) return;
  sockaddr_storage peer{};
  int length = sizeof peer;
  char host[64] = "?";
  int port = 0;
  if (uv_tcp_getpeername(&tcp_, reinterpret_cast<sockaddr*>(&peer), &length) == 0) {
    if (peer.ss_family == AF_INET6) {
      const auto& a = reinterpret_cast<const sockaddr_in6&>(peer);
      uv_ip6_name(&a, host, sizeof host);
      port = ntohs(a.sin6_port);
    } else {
      const auto& a = reinterpret_cast<const sockaddr_in&>(peer);
      uv_ip4_name(&a, host, sizeof host);
      port = ntohs(a.sin_port);
    }
  }
  std::fprintf(stderr, "troupe: http: client %s:%d %s (%zu bytes waiting); disconnected%s\n", host, port, why.c_str(),
               queued_bytes_, current_ ? ", which cancels its request" : "");
  // A graceful close would queue the end behind everything it did not read.
  close(/*reset=*/true);
}

void http_connection::finish_response() {
  if (closed_) return;  // a failed write closed it, and settled the responder
  std::exchange(current_, nullptr)->settle(false);
  streaming_ = false;
  if (!keep_alive_ || host_.draining) return close_gracefully();
  start_timer(timer_use::awaiting_request, host_.options.idle_timeout);
  parse_input();
}

void http_connection::reject(int status, std::string_view message) {
  std::string body = error_body(message);
  send(format_head(status, "application/json", framing::length, body.size(), false, {}) + body);
  close_gracefully();
}

void http_connection::close_gracefully() {
  if (closing_ || closed_) return;
  closing_ = true;
  input_.clear();
  set_reading(true);  // to see the client close, and to discard what it still sends
  start_timer(timer_use::closing, host_.options.idle_timeout);  // time to take the last response
  if (queued_bytes_ == 0) shut_down_writing();
}

void http_connection::shut_down_writing() {
  auto req = std::make_unique<uv_shutdown_t>();
  if (uv_shutdown(req.get(), as_stream(&tcp_), on_shutdown) != 0) return close();
  req.release();
}

void http_connection::start_timer(timer_use use, std::chrono::milliseconds timeout) {
  timer_use_ = use;
  uv_timer_start(&timer_, on_timer, uint64_t(timeout.count()), 0);
}

void http_connection::set_reading(bool on) {
  if (on == reading_ || closed_) return;
  if (!on) {
    uv_read_stop(as_stream(&tcp_));
  } else if (uv_read_start(as_stream(&tcp_), on_alloc, on_read) != 0) {
    return close();
  }
  reading_ = on;
}

}  // namespace troupe::http
