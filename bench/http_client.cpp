#include "bench/http_client.hpp"

#include <http_parser.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>

namespace troupe::bench {
namespace {

// A host that has not answered a SYN in this long is down or filtered.
constexpr std::chrono::milliseconds connect_timeout{10000};

std::string os_error(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// poll() for one descriptor: 1 when ready, 0 on timeout, -1 on failure.
int wait_for(int fd, short events, std::chrono::milliseconds timeout) {
  pollfd p{fd, events, 0};
  int r;
  do r = ::poll(&p, 1, int(timeout.count()));
  while (r < 0 && errno == EINTR);
  return r;
}

std::string host_port(const server_address& a) {
  const bool v6 = a.host.find(':') != std::string::npos;
  return (v6 ? "[" + a.host + "]" : a.host) + ":" + std::to_string(a.port);
}

struct response_state {
  const body_sink* sink;
  int status = 0;
  bool complete = false;
  bool keep_alive = false;
};

const http_parser_settings& parser_settings() {
  static const http_parser_settings settings = [] {
    http_parser_settings s;
    http_parser_settings_init(&s);
    s.on_headers_complete = [](http_parser* p) {
      static_cast<response_state*>(p->data)->status = int(p->status_code);
      return 0;
    };
    s.on_body = [](http_parser* p, const char* at, size_t n) {
      auto& st = *static_cast<response_state*>(p->data);
      (*st.sink)(st.status, std::string_view(at, n));
      return 0;
    };
    s.on_message_complete = [](http_parser* p) {
      auto& st = *static_cast<response_state*>(p->data);
      st.complete = true;
      st.keep_alive = http_should_keep_alive(p);
      http_parser_pause(p, 1);
      return 0;
    };
    return s;
  }();
  return settings;
}

}  // namespace

result<server_address> parse_base_url(std::string_view url) {
  const std::string shown = "base URL \"" + std::string(url) + "\"";
  constexpr std::string_view scheme = "http://";
  if (url.rfind("https://", 0) == 0) return error{shown + ": https is not supported; use http://"};
  if (url.rfind(scheme, 0) != 0) return error{shown + " must start with http://"};
  url.remove_prefix(scheme.size());
  const size_t slash = url.find('/');
  std::string_view authority = url.substr(0, slash), port_text;
  server_address a;
  if (slash != std::string_view::npos) a.path_prefix = url.substr(slash);
  while (!a.path_prefix.empty() && a.path_prefix.back() == '/') a.path_prefix.pop_back();
  if (authority.rfind('[', 0) == 0) {  // [v6-address]:port
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return error{shown + ": unclosed '['"};
    a.host = authority.substr(1, close - 1);
    port_text = authority.substr(close + 1);
  } else {
    const size_t colon = authority.find(':');
    a.host = authority.substr(0, colon);
    if (colon != std::string_view::npos) port_text = authority.substr(colon);
  }
  if (a.host.empty()) return error{shown + " has no host"};
  if (!port_text.empty()) {
    if (port_text[0] != ':') return error{shown + ": junk after the host"};
    port_text.remove_prefix(1);
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), a.port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || a.port < 1 || a.port > 65535)
      return error{shown + ": bad port \"" + std::string(port_text) + "\""};
  }
  return a;
}

std::string to_string(const server_address& a) { return "http://" + host_port(a) + a.path_prefix; }

http_client::http_client(server_address address, std::chrono::milliseconds read_timeout)
    : address_(std::move(address)), read_timeout_(read_timeout) {}

http_client::~http_client() { close(); }

void http_client::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

status http_client::connect() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address_.port);
  if (int rc = ::getaddrinfo(address_.host.c_str(), port.c_str(), &hints, &found); rc != 0)
    return error{"cannot resolve " + address_.host + ": " + ::gai_strerror(rc)};
  std::string failure;
  for (addrinfo* ai = found; ai && fd_ < 0; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      failure = os_error("socket");
      continue;
    }
    int r = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (r != 0 && errno == EINPROGRESS) {
      if (wait_for(fd, POLLOUT, connect_timeout) == 0) {
        errno = ETIMEDOUT;
      } else {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        errno = err;
        r = err ? -1 : 0;
      }
    }
    if (r != 0) {
      failure = std::strerror(errno);
      ::close(fd);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fd_ = fd;
  }
  ::freeaddrinfo(found);
  if (fd_ < 0) return error{"cannot connect to " + to_string(address_) + ": " + failure};
  reused_ = false;
  return ok();
}

status http_client::send_all(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(size_t(n));
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (wait_for(fd_, POLLOUT, read_timeout_) == 0) return error{"sending the request timed out"};
    } else if (errno != EINTR) {
      return error{os_error("send")};
    }
  }
  return ok();
}

result<int> http_client::exchange(const std::string& bytes, const body_sink& sink, bool& stale) {
  stale = false;
  if (auto s = send_all(bytes); !s) {
    stale = reused_;
    return s.err();
  }
  response_state st{&sink};
  http_parser parser;
  http_parser_init(&parser, HTTP_RESPONSE);
  parser.data = &st;
  bool got_any = false;
  char buf[16384];
  while (!st.complete) {
    const int ready = wait_for(fd_, POLLIN, read_timeout_);
    if (ready == 0) {
      char limit[32];
      std::snprintf(limit, sizeof limit, "%.3g", double(read_timeout_.count()) / 1000);
      return error{"the server sent nothing for " + std::string(limit) + " s (--timeout)"};
    }
    if (ready < 0) return error{os_error("poll")};
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0 && errno != ECONNRESET) return error{os_error("recv")};
    if (n == 0) {
      http_parser_execute(&parser, &parser_settings(), nullptr, 0);  // ends a body that runs to the close
      if (st.complete) break;
    }
    if (n <= 0) {
      stale = reused_ && !got_any;
      return error{std::string(n == 0 ? "the server closed the connection" : "the server reset the connection") +
                   (got_any ? " mid-response" : " without answering")};
    }
    got_any = true;
    const size_t used = http_parser_execute(&parser, &parser_settings(), buf, size_t(n));
    if (!st.complete && (used != size_t(n) || HTTP_PARSER_ERRNO(&parser) != HPE_OK))
      return error{std::string("bad HTTP response: ") + http_errno_description(HTTP_PARSER_ERRNO(&parser))};
  }
  reused_ = true;
  if (!st.keep_alive) close();
  return st.status;
}

result<int> http_client::request(std::string_view method, std::string_view path, std::string_view extra_headers,
                                 std::string_view body, const body_sink& sink) {
  std::string bytes = std::string(method) + " " + address_.path_prefix + std::string(path) +
                      " HTTP/1.1\r\nHost: " + host_port(address_) + "\r\nAccept: */*\r\n";
  if (!body.empty())
    bytes += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  bytes += extra_headers;
  bytes += "\r\n";
  bytes += body;
  for (int attempt = 0;; ++attempt) {
    if (fd_ < 0)
      if (auto s = connect(); !s) return s.err();
    bool stale = false;
    auto r = exchange(bytes, sink, stale);
    if (r) return r;
    close();
    if (!stale || attempt > 0) return r;
  }
}

}  // namespace troupe::bench
