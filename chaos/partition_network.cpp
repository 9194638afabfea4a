#include "chaos/partition_network.hpp"

#include <arpa/inet.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>

#include "base/network_namespace.hpp"

extern char** environ;

namespace troupe::chaos {
namespace {

constexpr const char* bridge = "chaos0";

// `ip ARGS`, its errors on stderr; an error naming the command when it fails.
status ip(std::vector<std::string> args) {
  args.insert(args.begin(), "ip");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string shown;
  for (const auto& a : args) shown += (shown.empty() ? "" : " ") + a;
  pid_t pid = 0;
  if (int e = posix_spawnp(&pid, "ip", nullptr, nullptr, argv.data(), environ); e != 0)
    return error{shown + ": " + std::strerror(e) + " (partition drills need ip(8), from iproute2)"};
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return error{shown + " failed (its error is above)"};
  return ok();
}

bool is_ipv4(const std::string& address) {
  in_addr a;
  return inet_pton(AF_INET, address.c_str(), &a) == 1;
}

}  // namespace

result<std::unique_ptr<partition_network>> partition_network::create(const cluster_spec& spec) {
  const node_spec* gateway = spec.node(spec.gateway.node);
  if (gateway == nullptr || !is_ipv4(gateway->address) || gateway->address.rfind("127.", 0) == 0)
    return error{spec.file.string() + ": the gateway's node needs an IPv4 address off the loopback, in the subnet (/24) "
                 "of the nodes in network namespaces: the chaos run's bridge to them takes it"};
  if (int e = enter_new_network_namespace(); e != 0)
    return error{std::string("a network namespace of the run's own: ") + std::strerror(e) +
                 " (partition drills need root)"};
  std::unique_ptr<partition_network> net(new partition_network());
  for (const auto& step : std::vector<std::vector<std::string>>{
           {"link", "set", "lo", "up"},
           {"link", "add", bridge, "type", "bridge"},
           {"addr", "add", gateway->address + "/24", "dev", bridge},
           {"link", "set", bridge, "up"}})
    if (auto done = ip(step); !done) return done.err();
  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    const node_spec& n = spec.nodes[i];
    if (n.netns.empty()) continue;
    if (!is_ipv4(n.address))
      return error{spec.file.string() + ":" + std::to_string(n.line) + ": node " + n.name +
                   " is in a network namespace; the chaos run gives it an IPv4 address, not " + n.address};
    if (auto made = ip({"netns", "add", n.netns}); !made)
      return error{made.err().message + "; is another chaos run using network namespace " + n.netns +
                   "? (`ip netns del " + n.netns + "` removes a stale one)"};
    net->namespaces_.push_back(n.netns);
    const std::string link = "node" + std::to_string(i);
    for (const auto& step : std::vector<std::vector<std::string>>{
             {"-n", n.netns, "link", "set", "lo", "up"},
             {"link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", n.netns},
             {"link", "set", link, "master", bridge},
             {"link", "set", link, "up"},
             {"-n", n.netns, "addr", "add", n.address + "/24", "dev", "eth0"},
             {"-n", n.netns, "link", "set", "eth0", "up"}})
      if (auto done = ip(step); !done) return done.err();
    net->links_[n.name] = link;
  }
  return net;
}

partition_network::~partition_network() {
  for (const std::string& ns : namespaces_) (void)ip({"netns", "del", ns});
}

status partition_network::cut(const std::string& node) {
  auto link = links_.find(node);
  if (link == links_.end()) return error{"node " + node + " is in no network namespace of this run"};
  return ip({"link", "set", link->second, "down"});
}

status partition_network::heal(const std::string& node) {
  auto link = links_.find(node);
  if (link == links_.end()) return error{"node " + node + " is in no network namespace of this run"};
  return ip({"link", "set", link->second, "up"});
}

}  // namespace troupe::chaos
