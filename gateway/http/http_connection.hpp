#pragma once
// One client connection, on the loop thread: reads and parses requests one at a time,
// hands each to the handler, writes its response, and enforces the timeouts and limits.
#include <uv.h>

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/http/http_server.hpp"
#include "gateway/http/loop_inbox.hpp"
#include "gateway/http/request_parser.hpp"

namespace troupe::http {

class http_connection;
class connection_responder;

// What connections share with their server; loop thread only.
struct connection_host {
  uv_loop_t* loop;
  server_options options;
  handler handle;
  std::shared_ptr<loop_inbox> inbox;
  bool draining = false;                         // shutting down: no further requests on any connection
  std::function<void(http_connection&)> closed;  // its handles are closed: forget it
  std::array<char, 64 << 10> read_buffer;        // every read lands here and is used at once
};

class http_connection : public std::enable_shared_from_this<http_connection> {
 public:
  explicit http_connection(connection_host& host);
  http_connection(const http_connection&) = delete;
  http_connection& operator=(const http_connection&) = delete;

  // Takes the client waiting on `listener`; false when there was none (then close()).
  bool accept(uv_stream_t* listener);

  // A responder's work; ignored unless `from` answers the request in flight.
  void respond(const connection_responder* from, int status, std::string_view content_type, std::string body,
               const std::vector<header>& extra);
  void start_stream(const connection_responder* from, int status, std::string_view content_type,
                    const std::vector<header>& extra);
  void write(const connection_responder* from, std::string chunk);
  void end(const connection_responder* from);

  // A response is in flight or not yet all written.
  bool busy() const;
  bool is_closed() const { return closed_; }
  // Shutting down: closes once the response in flight, if any, is written.
  void drain();
  // Closes now; a response in flight sees its client go. `reset`: with a TCP reset, so that
  // neither kernel keeps what the client left unread.
  void close(bool reset = false);

 private:
  enum class timer_use { awaiting_request, closing };

  static void on_alloc(uv_handle_t* handle, size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* stream, ssize_t n, const uv_buf_t* buf);
  static void on_written(uv_write_t* req, int status);
  static void on_shutdown(uv_shutdown_t* req, int status);
  static void on_timer(uv_timer_t* timer);
  static void on_send_timeout(uv_timer_t* timer);
  static void on_handle_closed(uv_handle_t* handle);

  void received(std::string_view data);
  void parse_input();
  void dispatch(parsed_request r);
  bool answers(const connection_responder* from) const;
  void send(std::string bytes);
  void finish_response();
  void reject(int status, std::string_view message);
  void close_gracefully();
  void shut_down_writing();
  void start_timer(timer_use use, std::chrono::milliseconds timeout);
  void set_reading(bool on);
  void watch_sending();
  void drop_stalled_client(const std::string& why);

  connection_host& host_;
  uv_tcp_t tcp_;
  uv_timer_t timer_;
  timer_use timer_use_ = timer_use::awaiting_request;
  uv_timer_t send_timer_;  // runs while bytes wait in libuv for a client that takes none
  bool send_timer_running_ = false;
  int open_handles_ = 3;
  request_parser parser_;
  std::string input_;  // received, not yet parsed: the next request's bytes
  bool request_started_ = false;
  std::shared_ptr<connection_responder> current_;  // the request in flight
  bool keep_alive_ = false;
  bool http_1_0_ = false;
  bool head_ = false;
  bool streaming_ = false;
  size_t queued_bytes_ = 0;  // handed to uv_write, not yet written
  bool reading_ = false;
  bool closing_ = false;  // no further requests; shut down once written
  bool closed_ = false;   // uv_close called
};

}  // namespace troupe::http
