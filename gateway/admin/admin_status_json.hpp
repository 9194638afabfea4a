#pragma once
// JSON of GET /admin/status, which `troupe cluster status` reads: every component the
// health monitor knows (stage or expert group: ready, restarts, seconds since it last
// finished a step) and every replica (weight, calls in flight, health, circuit, and its
// scheduler's running and waiting sequences and KV use). Both ends are here: the gateway
// writes it, the command parses it.
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"
#include "engine/messages.hpp"
#include "gateway/replica_router.hpp"

namespace troupe {

struct replica_status {
  replica_router::replica_view route;
  engine_stats engine;
};

struct cluster_status {
  std::vector<component_health> components;
  std::vector<replica_status> replicas;
};

std::string status_json(const cluster_status& status);
result<cluster_status> parse_status_json(std::string_view text);

}  // namespace troupe
