#pragma once
// The actor system settings of every process of a cluster: troupe's message types, the
// sharing scheduler, and CAF's middleman for control messages with cluster.conf's
// heartbeat interval and connection timeout (both off by default in CAF 0.17, so a
// partition would otherwise go unnoticed). The control links are mutual TLS (CAF's OpenSSL
// module, with the `certs` of node `self`) unless the file says `insecure = yes`.
#include <caf/all.hpp>

#include "actors/actors.hpp"
#include "cluster/cluster_spec.hpp"

namespace troupe::cli {

// Fails, naming the file, when node `self`'s TLS files are missing or do not fit together.
status configure_cluster_system(caf::actor_system_config& config, const cluster_spec& spec, const std::string& self);

// A node's agent offered on address:port (0: any free port): the port bound.
result<uint16_t> publish_agent(caf::actor_system& system, const node_agent_actor& agent, const std::string& address,
                               uint16_t port);

struct reached_agent {
  node_agent_actor agent;
  // Why there is none; `lasting` when waiting will not help (a certificate or TLS mismatch).
  std::string why;
  bool lasting = false;
};
reached_agent connect_agent(caf::actor_system& system, const cluster_spec& spec, const std::string& self,
                            const std::string& address, int port);

}  // namespace troupe::cli
