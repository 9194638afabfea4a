#pragma once
// The network of a chaos run whose cluster has nodes in network namespaces (`netns`), so
// that a partition drill can cut one off. The run moves itself into a network namespace of
// its own (the head it starts, the head's other nodes and the load follow), with its
// loopback up and a bridge that holds the gateway node's address; each namespaced node's
// namespace is created (ip netns add) with its loopback up and a veth pair to the bridge,
// the node's address on its end. cut(node) takes the bridge's end of that pair down, as a
// pulled cable would (the node's own end and address stay up, so a node started meanwhile
// still starts); heal(node) puts it back. The node namespaces are deleted with the object;
// the run's own goes with its process. Needs root and ip(8); touches nothing outside.
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

 private:
  partition_network() = default;

  std::map<std::string, std::string> links_;  // node -> the bridge's end of its veth pair
  std::vector<std::string> namespaces_;       // created here, deleted at the end
};

}  // namespace troupe::chaos
