#include "chaos/garbage_connections.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

namespace troupe::chaos {
namespace {

constexpr int parallel = 8;

std::vector<uint8_t> garbage(int i, std::mt19937& random) {
  std::vector<uint8_t> bytes;
  auto append_random = [&](size_t n) {
    for (size_t k = 0; k < n; ++k) bytes.push_back(uint8_t(random()));
  };
  switch (i % 4) {
    case 0:
      append_random(1 + size_t(random() % 512));
      break;
    case 1:  // a 32-byte header whose length field says 4 GiB
      append_random(32);
      for (int k = 4; k < 8; ++k) bytes[size_t(k)] = 0xff;
      break;
    case 2:  // a TLS handshake record header announcing 64 KiB, then 64 bytes
      bytes = {0x16, 0x03, 0x01, 0xff, 0xff};
      append_random(64);
      break;
    default:
      break;  // connect, then close
  }
  return bytes;
}

bool one_connection(const sockaddr_in& to, const std::vector<uint8_t>& bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  timeval second{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &second, sizeof second);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &second, sizeof second);
  const bool connected = connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0;
  if (connected && !bytes.empty()) (void)!send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  close(fd);
  return connected;
}

}  // namespace

std::vector<listening_port> listening_ports(int pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::error_code ec;
  const bool same_network =
      std::filesystem::read_symlink(proc + "/ns/net", ec) == std::filesystem::read_symlink("/proc/self/ns/net", ec);
  std::set<std::string> inodes;
  for (const auto& fd : std::filesystem::directory_iterator(proc + "/fd", ec)) {
    const auto target = std::filesystem::read_symlink(fd.path(), ec).string();
    if (!ec && target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::vector<listening_port> ports;
  std::ifstream tcp(proc + "/net/tcp");
  std::string line;
  std::getline(tcp, line);  // the header
  while (std::getline(tcp, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
    if (state != "0A" || !inodes.count(inode)) continue;  // 0A: LISTEN
    const auto colon = local.find(':');
    if (colon == std::string::npos) continue;
    in_addr ip{static_cast<in_addr_t>(std::stoul(local.substr(0, colon), nullptr, 16))};
    char text[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &ip, text, sizeof text);
    const std::string address = text;
    if (!same_network && (address.rfind("127.", 0) == 0 || address == "0.0.0.0")) continue;
    ports.push_back({address == "0.0.0.0" ? "127.0.0.1" : address, std::stoi(local.substr(colon + 1), nullptr, 16)});
  }
  return ports;
}

int send_garbage(const listening_port& at, int count, unsigned seed) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(uint16_t(at.port));
  if (inet_pton(AF_INET, at.address.c_str(), &to.sin_addr) != 1) return 0;
  std::atomic<int> next{0}, connected{0};
  std::vector<std::thread> senders;
  for (int t = 0; t < parallel; ++t)
    senders.emplace_back([&, t] {
      std::mt19937 random(seed + unsigned(t));
      for (int i = next++; i < count; i = next++)
        if (one_connection(to, garbage(i, random))) ++connected;
    });
  for (auto& s : senders) s.join();
  return connected;
}

}  // namespace troupe::chaos
