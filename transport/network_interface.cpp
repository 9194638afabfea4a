#include "transport/network_interface.hpp"

#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

namespace troupe {
namespace {

// The raw bytes of an IPv4 or IPv6 socket address, for comparing.
std::string ip_bytes(const sockaddr* a) {
  if (a->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(a);
    return std::string(reinterpret_cast<const char*>(&v4->sin_addr), sizeof v4->sin_addr);
  }
  if (a->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(a);
    return std::string(reinterpret_cast<const char*>(&v6->sin6_addr), sizeof v6->sin6_addr);
  }
  return {};
}

}  // namespace

result<std::string> interface_of(const std::string& address) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int e = getaddrinfo(address.c_str(), nullptr, &hints, &found); e != 0)
    return error{"address " + address + ": " + gai_strerror(e)};
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> resolved(found, freeaddrinfo);
  std::vector<std::string> wanted;
  for (const addrinfo* a = found; a; a = a->ai_next) wanted.push_back(ip_bytes(a->ai_addr));
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return error{std::string("getifaddrs: ") + std::strerror(errno)};
  std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> interfaces(list, freeifaddrs);
  for (const ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    const std::string mine = ip_bytes(i->ifa_addr);
    for (const std::string& w : wanted)
      if (!mine.empty() && mine == w) return std::string(i->ifa_name);
  }
  return error{"address " + address + " is on no network interface of this host"};
}

}  // namespace troupe
