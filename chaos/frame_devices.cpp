#include "chaos/frame_devices.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace troupe::chaos {
namespace {

error system_error(const std::string& what) { return error{what + ": " + std::strerror(errno)}; }

}  // namespace

result<int> open_tap(const std::string& name) {
  if (name.size() >= IFNAMSIZ) return error{"tap device name `" + name + "` is too long"};
  const int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  if (fd < 0) return system_error("/dev/net/tun (delay drills need the tun driver)");
  ifreq request{};
  std::strncpy(request.ifr_name, name.c_str(), IFNAMSIZ - 1);
  request.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
  if (ioctl(fd, TUNSETIFF, &request) < 0) {
    auto failed = system_error("tap device " + name);
    close(fd);
    return failed;
  }
  return fd;
}

result<int> open_packet_socket(const std::string& interface) {
  const unsigned index = if_nametoindex(interface.c_str());
  if (index == 0) return system_error("interface " + interface);
  const int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
  if (fd < 0) return system_error("a packet socket on " + interface);
  const int on = 1;
  sockaddr_ll address{};
  address.sll_family = AF_PACKET;
  address.sll_protocol = htons(ETH_P_ALL);
  address.sll_ifindex = static_cast<int>(index);
  if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &on, sizeof on) < 0 ||
      setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &on, sizeof on) < 0 ||
      bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) < 0) {
    auto failed = system_error("a packet socket on " + interface);
    close(fd);
    return failed;
  }
  return fd;
}

}  // namespace troupe::chaos
