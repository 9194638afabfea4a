#pragma once
// The network of a chaos run whose cluster has nodes in network namespaces (`netns`), so
// that a partition drill can cut one off. The run moves itself into a network namespace of
// its own (the head it starts, the head's other nodes and the load follow), with its
// loopback up and a bridge that holds the gateway node's address; each namespaced node's
// namespace is created (ip netns add) with its loopback up and a veth pair to the bridge,
// the node's address on its end. cut(node) takes the bridge's end of that pair down, as a
// pulled cable would (the node's own end and address stay up, so a node started meanwhile
// still starts); heal(node) puts it back. throttle(node) puts a token bucket (tc tbf) on
// both ends of the pair: the link carries `rate_kbit`, a packet waits at most `queue_ms`
// for it and is dropped beyond that (delay and loss as a congested link has them; this
// kernel has no netem to add them at random); unthrottle(node) takes it off.
// drop_at_random(node) drops `percent` of the packets the node sends and receives on its
// link, each at random (an nftables table in its namespace, numgen random), and
// stop_dropping(node) deletes that table. delay(node) holds each frame the node sends or
// receives for a random time (delay +- jitter, tc netem's delay, which this kernel lacks):
// the pair's bridge end leaves the bridge, and a delay_line carries its frames to and from a
// tap device that joins the bridge in its place; undelay(node) puts the pair back. The node
// namespaces are deleted with the object; the run's own goes with its process. Needs root,
// ip(8) and tc(8) (iproute2), nft(8) (nftables) and the tun driver; touches nothing outside.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/result.hpp"
#include "cluster/cluster_spec.hpp"

namespace troupe::chaos {

class partition_network {
 public:
  // Call it before any thread starts: only the calling thread moves, and what it starts.
  static result<std::unique_ptr<partition_network>> create(const cluster_spec& spec);
  ~partition_network();
  partition_network(const partition_network&) = delete;
  partition_network& operator=(const partition_network&) = delete;

  status cut(const std::string& node);
  status heal(const std::string& node);
  status throttle(const std::string& node, int rate_kbit, int queue_ms);
  status unthrottle(const std::string& node);
  status drop_at_random(const std::string& node, int percent);
  status stop_dropping(const std::string& node);
  status delay(const std::string& node, std::chrono::microseconds delay, std::chrono::microseconds jitter,
               uint32_t seed);
  status undelay(const std::string& node);

 private:
  struct node_link {
    std::string bridge_end;  // of its veth pair; the node's end is eth0 in its namespace
    std::string netns;
  };

  partition_network() = default;
  result<node_link> link_of(const std::string& node) const;

  struct delayed_link;  // a tap, a packet socket and the delay line between them

  std::map<std::string, node_link> links_;
  std::map<std::string, std::unique_ptr<delayed_link>> delayed_;  // by node
  std::vector<std::string> namespaces_;                           // created here, deleted at the end
};

}  // namespace troupe::chaos
