#include "chaos/slow_client.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace troupe::chaos {
namespace {

using clock_type = std::chrono::steady_clock;

// A blocking socket to the server whose receive buffer is set small before connecting (so
// the window it offers stays small); -1 with `why` when it fails.
int connect_small(const bench::server_address& server, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(server.host.c_str(), std::to_string(server.port).c_str(), &hints, &found); rc != 0) {
    why = "cannot resolve " + server.host + ": " + ::gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* ai = found; ai && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    const int small = 4096;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      why = std::string("connect: ") + std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  return fd;
}

bool send_all(int fd, const std::string& bytes) {
  for (size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += size_t(n);
  }
  return true;
}

// The server reset the connection (or closed it and the end was read).
bool ended_by_server(int fd) {
  tcp_info info{};
  socklen_t length = sizeof info;
  return ::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) == 0 && info.tcpi_state == TCP_CLOSE;
}

}  // namespace

slow_client_result run_slow_client(const bench::server_address& server, const bench::request_spec& spec,
                                   const bench::bench_prompt& prompt, const std::atomic<bool>& stop) {
  slow_client_result out;
  const int fd = connect_small(server, out.error);
  if (fd < 0) return out;
  const std::string body = bench::request_body(spec, prompt);
  std::string request = "POST " + server.path_prefix + spec.endpoint + " HTTP/1.1\r\nHost: " + server.host +
                        "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  if (!spec.api_key.empty()) request += "Authorization: Bearer " + spec.api_key + "\r\n";
  request += "\r\n" + body;
  const auto start = clock_type::now();
  if (!send_all(fd, request)) {
    out.error = std::string("send: ") + std::strerror(errno);
    ::close(fd);
    return out;
  }
  while (!stop && !out.dropped) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    char byte;
    const ssize_t n = ::recv(fd, &byte, 1, MSG_DONTWAIT);
    if (n > 0) ++out.bytes_read;
    out.dropped = n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || ended_by_server(fd);
  }
  out.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  ::close(fd);
  return out;
}

}  // namespace troupe::chaos
