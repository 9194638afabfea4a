#pragma once
// The garbage drill's fault: connections to every TCP port a node's process listens on,
// each sending what a stranger might (random bytes, a frame header announcing a 4 GiB
// payload, a TLS record header announcing more than follows, or nothing) and closing.
#include <string>
#include <vector>

namespace troupe::chaos {

struct listening_port {
  std::string address;  // IPv4 dotted; 0.0.0.0 taken as 127.0.0.1
  int port = 0;
};

// The IPv4 TCP ports process `pid` listens on that this process can reach, from /proc:
// a process in another network namespace has its loopback to itself.
std::vector<listening_port> listening_ports(int pid);

// `count` such connections to `at`, a few at a time, each bounded by a second: how many
// connected.
int send_garbage(const listening_port& at, int count, unsigned seed);

}  // namespace troupe::chaos
