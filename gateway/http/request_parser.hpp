#pragma once
// Incremental HTTP/1.x request parsing (http-parser underneath), one request at a time:
// it stops at the end of each request so that pipelined bytes wait for their turn. No
// I/O here, so the fuzz target drives exactly what the server runs.
#include <http_parser.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "gateway/http/http_request.hpp"

namespace troupe::http {

struct parsed_request {
  request message;
  bool keep_alive;  // another request may follow on this connection
  bool http_1_0;    // the response can be neither chunked nor kept alive
};

class request_parser {
 public:
  // Header bytes count the request line and header fields; http-parser itself also caps
  // them at 80 KiB, which is answered the same way.
  request_parser(size_t max_header_bytes, size_t max_body_bytes);
  request_parser(const request_parser&) = delete;
  request_parser& operator=(const request_parser&) = delete;

  // Parses the start of `data`, up to the end of one request; returns the bytes used.
  // Does nothing once complete() or failed().
  size_t feed(std::string_view data);

  bool complete() const { return complete_; }
  bool failed() const { return error_status_ != 0; }
  // Once failed: the status to answer with (400, 413, 431, 505) and why, in a few words.
  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }
  // True once for a request whose client waits for "100 Continue" before its body.
  bool take_continue();
  // The complete request; parsing moves on to the next one.
  parsed_request take();

 private:
  static int on_message_begin(http_parser* p);
  static int on_url(http_parser* p, const char* at, size_t n);
  static int on_header_field(http_parser* p, const char* at, size_t n);
  static int on_header_value(http_parser* p, const char* at, size_t n);
  static int on_headers_complete(http_parser* p);
  static int on_body(http_parser* p, const char* at, size_t n);
  static int on_message_complete(http_parser* p);

  bool count_header_bytes(size_t n);
  int fail(int status, std::string message);

  size_t max_header_bytes_, max_body_bytes_;
  http_parser parser_;
  std::string url_;
  parsed_request current_{};
  size_t header_bytes_ = 0;
  bool in_value_ = false;
  bool continue_ = false;
  bool complete_ = false;
  int error_status_ = 0;
  std::string error_message_;
};

}  // namespace troupe::http
