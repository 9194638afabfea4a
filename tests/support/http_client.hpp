#pragma once
// A blocking HTTP/1.1 client over a real socket, for tests that talk to the server. Every
// wait is bounded, so a broken server fails a test instead of hanging it.
#include <arpa/inet.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/http/http_request.hpp"

namespace troupe::test {

struct http_response {
  int status = 0;
  std::vector<http::header> headers;
  std::string body;
  std::vector<std::string> pieces;  // the body as it was framed: one entry per chunk
  bool keep_alive = false;

  std::string_view header(std::string_view name) const {
    for (const auto& h : headers)
      if (http::equals_ignoring_case(h.name, name)) return h.value;
    return {};
  }
};

class http_client {
 public:
  explicit http_client(int port, std::chrono::milliseconds timeout = std::chrono::seconds(5)) : timeout_(timeout) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) close();
  }
  ~http_client() { close(); }
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  bool connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(size_t(n));
    }
    return true;
  }

  // One whole response, or nothing when the server closed, failed or took too long.
  std::optional<http_response> read_response(bool to_head = false) {
    for (;;) {
      if (auto r = parse(to_head)) return r;
      if (eof_ || !receive()) return eof_ ? parse(to_head, true) : std::nullopt;
    }
  }

  // Reads until the raw bytes received contain `needle`.
  bool read_until(std::string_view needle) {
    while (buffer_.find(needle) == std::string::npos)
      if (!receive()) return false;
    return true;
  }

  // True when the server closes the connection (reading and dropping whatever comes first).
  bool closed_by_server() {
    while (receive()) buffer_.clear();
    return eof_;
  }

  // The raw bytes received and not yet taken by read_response().
  const std::string& received() const { return buffer_; }

 private:
  struct parse_state {
    http_response r;
    bool to_head = false;
    bool in_value = false;
    bool complete = false;
  };

  bool receive() {
    if (fd_ < 0 || eof_) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, int(timeout_.count())) != 1) return false;
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buffer_.append(buf, size_t(n));
    return true;
  }

  // Parses buffer_ from its start; on a whole response, removes its bytes.
  std::optional<http_response> parse(bool to_head, bool at_eof = false) {
    static const http_parser_settings settings = [] {
      http_parser_settings s;
      http_parser_settings_init(&s);
      s.on_header_field = [](http_parser* p, const char* at, size_t n) {
        auto& st = *static_cast<parse_state*>(p->data);
        if (st.in_value || st.r.headers.empty()) st.r.headers.emplace_back();
        st.in_value = false;
        st.r.headers.back().name.append(at, n);
        return 0;
      };
      s.on_header_value = [](http_parser* p, const char* at, size_t n) {
        auto& st = *static_cast<parse_state*>(p->data);
        st.in_value = true;
        st.r.headers.back().value.append(at, n);
        return 0;
      };
      s.on_headers_complete = [](http_parser* p) {
        auto& st = *static_cast<parse_state*>(p->data);
        st.r.status = int(p->status_code);
        return st.to_head ? 1 : 0;  // 1: this response has no body
      };
      s.on_chunk_header = [](http_parser* p) {
        auto& st = *static_cast<parse_state*>(p->data);
        if (p->content_length > 0) st.r.pieces.emplace_back();
        return 0;
      };
      s.on_body = [](http_parser* p, const char* at, size_t n) {
        auto& st = *static_cast<parse_state*>(p->data);
        st.r.body.append(at, n);
        if (p->flags & F_CHUNKED) st.r.pieces.back().append(at, n);
        return 0;
      };
      s.on_message_complete = [](http_parser* p) {
        auto& st = *static_cast<parse_state*>(p->data);
        st.complete = true;
        st.r.keep_alive = http_should_keep_alive(p);
        http_parser_pause(p, 1);
        return 0;
      };
      return s;
    }();
    parse_state st;
    st.to_head = to_head;
    http_parser parser;
    http_parser_init(&parser, HTTP_RESPONSE);
    parser.data = &st;
    size_t used = http_parser_execute(&parser, &settings, buffer_.data(), buffer_.size());
    if (at_eof && !st.complete) http_parser_execute(&parser, &settings, nullptr, 0);
    if (!st.complete) return std::nullopt;
    buffer_.erase(0, used);
    if (st.r.status == 100) return parse(to_head, at_eof);  // "100 Continue" comes first
    return st.r;
  }

  std::chrono::milliseconds timeout_;
  int fd_ = -1;
  std::string buffer_;
  bool eof_ = false;
};

}  // namespace troupe::test
