#include "cli/cluster_system.hpp"

#include <caf/io/middleman.hpp>

#include "actors/message_types.hpp"

namespace troupe::cli {

void configure_cluster_system(caf::actor_system_config& config, const cluster_spec& spec) {
  add_message_types(config);
  config.load<caf::io::middleman>();
  config.set("scheduler.policy", caf::atom("sharing"));
  config.set("middleman.heartbeat-interval", caf::timespan{spec.cluster.heartbeat_interval});
  config.set("middleman.connection-timeout", caf::timespan{spec.cluster.connection_timeout});
}

}  // namespace troupe::cli
