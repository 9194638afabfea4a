#pragma once
#include <chrono>
#include <map>
#include <string>

#include "actors/actors.hpp"

namespace troupe {

struct health_monitor_state {
  static inline const char* name = "health_monitor";
  struct component {
    bool ready = false;
    std::chrono::steady_clock::time_point last_progress;
    uint32_t restarts = 0;
    caf::actor_addr reporter;  // the actor that last said ready: its end makes it not ready
  };
  std::map<std::string, component> components;
};

// Tracks readiness, restarts and the time since each component last made progress. A
// component is ready from its ready message until it is restarted or the actor that sent
// the message ends, however: a crash, or its node's process gone (in another process, once
// the connection timeout passes), so a dead node's stages never look ready.
health_monitor_actor::behavior_type health_monitor(
    health_monitor_actor::stateful_pointer<health_monitor_state> self);

}  // namespace troupe
