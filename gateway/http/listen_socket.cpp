#include "gateway/http/listen_socket.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace troupe::http {

namespace {

constexpr int backlog = 511;

// A bound socket for one resolved address, or -1 with errno set.
int bind_socket(const addrinfo& a) {
  int fd = ::socket(a.ai_family, a.ai_socktype | SOCK_CLOEXEC, a.ai_protocol);
  if (fd < 0) return -1;
  int on = 1, off = 0;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);  // restarts reuse a port in TIME_WAIT
  if (a.ai_family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);  // "::" takes IPv4 too
  if (::bind(fd, a.ai_addr, a.ai_addrlen) == 0) return fd;
  int saved = errno;
  ::close(fd);
  errno = saved;
  return -1;
}

}  // namespace

status listen_tcp(uv_tcp_t* tcp, const std::string& host, int port, uv_connection_cb on_connection) {
  std::string where = host + ":" + std::to_string(port);
  if (port < 0 || port > 65535) return error{"cannot listen on " + where + ": port outside 0..65535"};
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int e = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); e != 0)
    return error{"cannot listen on " + where + ": cannot resolve \"" + host + "\": " + gai_strerror(e)};
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owned(found, ::freeaddrinfo);
  int fd = -1, last_errno = 0;
  for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
    fd = bind_socket(*a);
    last_errno = errno;
  }
  if (fd < 0) return error{"cannot listen on " + where + ": " + std::strerror(last_errno)};
  if (int e = uv_tcp_open(tcp, fd); e != 0) {
    ::close(fd);
    return error{"cannot listen on " + where + ": " + uv_strerror(e)};
  }
  if (int e = uv_listen(reinterpret_cast<uv_stream_t*>(tcp), backlog, on_connection); e != 0)
    return error{"cannot listen on " + where + ": " + uv_strerror(e)};
  return ok();
}

}  // namespace troupe::http
