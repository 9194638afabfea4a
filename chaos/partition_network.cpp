#include "chaos/partition_network.hpp"

#include <arpa/inet.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <tuple>

#include "base/network_namespace.hpp"
#include "chaos/delay_line.hpp"
#include "chaos/frame_devices.hpp"

extern char** environ;

namespace troupe::chaos {
namespace {

constexpr const char* bridge = "chaos0";
constexpr const char* loss_table = "troupe_chaos_loss";  // in a node's namespace, while packets drop

// `PROGRAM ARGS` (ip, tc or nft), its errors on stderr; an error naming the command when it
// fails.
status run(const char* program, std::vector<std::string> args) {
  args.insert(args.begin(), program);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string shown;
  for (const auto& a : args) shown += (shown.empty() ? "" : " ") + a;
  pid_t pid = 0;
  if (int e = posix_spawnp(&pid, program, nullptr, nullptr, argv.data(), environ); e != 0)
    return error{shown + ": " + std::strerror(e) +
                 " (network drills need ip(8) and tc(8), from iproute2, and nft(8), from nftables)"};
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return error{shown + " failed (its error is above)"};
  return ok();
}

status ip(std::vector<std::string> args) { return run("ip", std::move(args)); }

bool is_ipv4(const std::string& address) {
  in_addr a;
  return inet_pton(AF_INET, address.c_str(), &a) == 1;
}

}  // namespace

result<std::unique_ptr<partition_network>> partition_network::create(const cluster_spec& spec) {
  const node_spec* gateway = spec.node(spec.gateway.node);
  if (gateway == nullptr || !is_ipv4(gateway->address) || gateway->address.rfind("127.", 0) == 0)
    return error{spec.file.string() +
                 ": the gateway's node needs an IPv4 address off the loopback, in the subnet (/24) "
                 "of the nodes in network namespaces: the chaos run's bridge to them takes it"};
  if (int e = enter_new_network_namespace(); e != 0)
    return error{std::string("a network namespace of the run's own: ") + std::strerror(e) +
                 " (partition drills need root)"};
  std::unique_ptr<partition_network> net(new partition_network());
  for (const auto& step :
       std::vector<std::vector<std::string>>{{"link", "set", "lo", "up"},
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
    net->links_[n.name] = {link, n.netns};
  }
  return net;
}

struct partition_network::delayed_link {
  int tap = -1;
  int socket = -1;
  std::unique_ptr<delay_line> line;

  ~delayed_link() {
    line.reset();
    if (socket >= 0) close(socket);
    if (tap >= 0) close(tap);  // the tap leaves the bridge and is gone
  }
};

partition_network::~partition_network() {
  delayed_.clear();
  for (const std::string& ns : namespaces_) (void)ip({"netns", "del", ns});
}

result<partition_network::node_link> partition_network::link_of(const std::string& node) const {
  auto link = links_.find(node);
  if (link == links_.end()) return error{"node " + node + " is in no network namespace of this run"};
  return link->second;
}

status partition_network::cut(const std::string& node) {
  auto link = link_of(node);
  if (!link) return link.err();
  return ip({"link", "set", link->bridge_end, "down"});
}

status partition_network::heal(const std::string& node) {
  auto link = link_of(node);
  if (!link) return link.err();
  return ip({"link", "set", link->bridge_end, "up"});
}

status partition_network::throttle(const std::string& node, int rate_kbit, int queue_ms) {
  auto link = link_of(node);
  if (!link) return link.err();
  // The bucket holds a few full frames, so a burst beyond the rate queues from the start.
  const std::vector<std::string> tbf{"root",  "tbf", "rate",    std::to_string(rate_kbit) + "kbit",
                                     "burst", "6kb", "latency", std::to_string(queue_ms) + "ms"};
  std::vector<std::string> toward_node{"qdisc", "replace", "dev", link->bridge_end};
  std::vector<std::string> from_node{"-n", link->netns, "qdisc", "replace", "dev", "eth0"};
  toward_node.insert(toward_node.end(), tbf.begin(), tbf.end());
  from_node.insert(from_node.end(), tbf.begin(), tbf.end());
  if (auto done = run("tc", toward_node); !done) return done;
  return run("tc", from_node);
}

status partition_network::unthrottle(const std::string& node) {
  auto link = link_of(node);
  if (!link) return link.err();
  auto toward_node = run("tc", {"qdisc", "del", "dev", link->bridge_end, "root"});
  auto from_node = run("tc", {"-n", link->netns, "qdisc", "del", "dev", "eth0", "root"});
  return toward_node ? from_node : toward_node;
}

status partition_network::drop_at_random(const std::string& node, int percent) {
  auto link = link_of(node);
  if (!link) return link.err();
  auto nft = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"netns", "exec", link->netns, "nft"});
    return ip(std::move(args));
  };
  if (auto done = nft({"add", "table", "inet", loss_table}); !done) return done;
  // A chain each way on the node's end of the link (its loopback keeps every packet).
  for (const auto& [chain, hook, device] :
       {std::tuple{"in", "input", "iifname"}, std::tuple{"out", "output", "oifname"}}) {
    if (auto done = nft({"add", "chain", "inet", loss_table, chain, "{", "type", "filter", "hook", hook, "priority",
                         "0", ";", "}"});
        !done)
      return done;
    if (auto done = nft({"add", "rule", "inet", loss_table, chain, device, "eth0", "numgen", "random", "mod", "100",
                         "<", std::to_string(percent), "drop"});
        !done)
      return done;
  }
  return ok();
}

status partition_network::stop_dropping(const std::string& node) {
  auto link = link_of(node);
  if (!link) return link.err();
  return ip({"netns", "exec", link->netns, "nft", "delete", "table", "inet", loss_table});
}

status partition_network::delay(const std::string& node, std::chrono::microseconds delay,
                                std::chrono::microseconds jitter, uint32_t seed) {
  auto link = link_of(node);
  if (!link) return link.err();
  if (delayed_.count(node)) return error{"node " + node + "'s link is delayed already"};
  auto delayed = std::make_unique<delayed_link>();
  const std::string tap_name = link->bridge_end + "delay";
  auto tap = open_tap(tap_name);
  if (!tap) return tap.err();
  delayed->tap = *tap;
  // The tap joins the bridge before the pair leaves it, so that frames toward the node queue
  // at the tap for the line. The pair's end answers no ARP once out of the bridge: the run's
  // addresses are the bridge's.
  for (const auto& step : std::vector<std::vector<std::string>>{{"link", "set", tap_name, "master", bridge},
                                                                {"link", "set", tap_name, "up"},
                                                                {"link", "set", link->bridge_end, "arp", "off"},
                                                                {"link", "set", link->bridge_end, "nomaster"}})
    if (auto done = ip(step); !done) return done;
  delayed_[node] = std::move(delayed);  // undelay puts the pair back from here on
  auto socket = open_packet_socket(link->bridge_end);
  if (!socket) return socket.err();
  delayed_[node]->socket = *socket;
  delayed_[node]->line = std::make_unique<delay_line>(*socket, *tap, delay_line::shape{delay, jitter}, seed);
  return ok();
}

status partition_network::undelay(const std::string& node) {
  auto link = link_of(node);
  if (!link) return link.err();
  if (delayed_.erase(node) == 0) return error{"node " + node + "'s link is not delayed"};
  if (auto done = ip({"link", "set", link->bridge_end, "master", bridge}); !done) return done;
  return ip({"link", "set", link->bridge_end, "arp", "on"});
}

}  // namespace troupe::chaos
