#pragma once
// A blocking HTTP/1.1 client on one keep-alive connection, for the serving benchmark (one
// per worker thread). Every wait is bounded: connecting by a fixed limit, each read by the
// read timeout, so a server that stops answering fails the request instead of hanging.
#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace troupe::bench {

struct server_address {
  std::string host;
  int port = 80;
  std::string path_prefix;  // what the base URL has after host:port, without a trailing '/'
};

// "http://host[:port][/prefix]"; https is refused (the benchmark speaks plain HTTP).
result<server_address> parse_base_url(std::string_view url);
std::string to_string(const server_address& a);

// Called with the status code and each piece of the body as it arrives.
using body_sink = std::function<void(int status, std::string_view bytes)>;

class http_client {
 public:
  http_client(server_address address, std::chrono::milliseconds read_timeout);
  ~http_client();
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  const server_address& address() const { return address_; }

  // Sends one request (a JSON body when `body` is not empty) and reads the whole response.
  // `extra_headers` are whole lines, each ending in "\r\n". Returns the status code, or an
  // error when connecting, sending or reading failed or timed out.
  result<int> request(std::string_view method, std::string_view path, std::string_view extra_headers,
                      std::string_view body, const body_sink& sink);

 private:
  status connect();
  status send_all(std::string_view bytes);
  // One exchange on the current connection. `stale` is set when a kept-alive connection
  // turned out closed before any byte came back: the server dropped it while idle.
  result<int> exchange(const std::string& bytes, const body_sink& sink, bool& stale);
  void close();

  server_address address_;
  std::chrono::milliseconds read_timeout_;
  int fd_ = -1;
  bool reused_ = false;
};

}  // namespace troupe::bench
