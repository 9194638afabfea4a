#pragma once
// The actor system settings of every process of a cluster: troupe's message types, the
// sharing scheduler, and CAF's middleman for control messages with cluster.conf's
// heartbeat interval and connection timeout (both off by default in CAF 0.17, so a
// partition would otherwise go unnoticed).
#include <caf/all.hpp>

#include "cluster/cluster_spec.hpp"

namespace troupe::cli {

void configure_cluster_system(caf::actor_system_config& config, const cluster_spec& spec);

}  // namespace troupe::cli
