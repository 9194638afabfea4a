#pragma once
// The network interface of this host (in this network namespace) that holds an address:
// what a node's UCX links listen on, so that they listen where cluster.conf puts the
// node and nowhere else.
#include <string>

#include "base/result.hpp"

namespace troupe {

// `address` is an IP literal or a host name (resolved first); the interface's name ("lo",
// "eth0"), or an error saying that no interface holds it.
result<std::string> interface_of(const std::string& address);

}  // namespace troupe
