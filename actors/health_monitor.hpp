#pragma once
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "actors/actors.hpp"

namespace troupe {

struct health_monitor_state {
  static inline const char* name = "health_monitor";
  struct component {
    bool ready = false;
    std::chrono::steady_clock::time_point last_progress;
    uint32_t restarts = 0;
    caf::actor_addr reporter;  // the actor that last said ready: its end makes it not ready
    caf::actor supervisor;     // the one that expected it: told when it is stuck
    std::optional<std::chrono::steady_clock::time_point> busy_since;  // a step in flight
    bool stuck = false;                                               // declared stuck
    // A step finished since it was last declared stuck: only then is its supervisor told
    // again (an in-process replacement stuck before any progress waits on something
    // outside it, which a next one would wait on too).
    bool progressed = true;
    // Times declared stuck since its last finished step: each doubles its progress timeout
    // (up to 8x), so that a stage slow on a congested link is not restarted again and again.
    int strikes = 0;
  };
  std::chrono::milliseconds progress_timeout{30000};
  std::map<std::string, component> components;
  // By replica prefix ("main/"; "" in one process): when one of its components was last
  // seen not ready, as of the last check.
  std::map<std::string, std::chrono::steady_clock::time_point> unsettled;
  std::vector<caf::actor> subscribers;
};

// Tracks readiness, restarts and the time since each component last made progress. A
// component is ready from its ready message until it is restarted or the actor that sent
// the message ends, however: a crash, or its node's process gone (in another process, once
// the connection timeout passes), so a dead node's stages never look ready. A component
// that has been in one step for longer than `progress_timeout` (a hung device, a
// collective that never returns: alive, but making no progress) is stuck, not ready at
// once, and within 100 ms more the subscribers (the head: restart its node's process)
// and its supervisor (replace it in its process) are told. The step counts from when its
// replica was last whole: a stage waiting on a node that is down or restarting waits, it
// is not stuck. The supervisor is told again only once the component has made progress
// since: a replacement that is stuck before finishing a step waits on something outside
// it (a wedged peer), and more replacements would only spend the restart budget; it stays
// not ready until the step returns or fails. Only the reporter's busy and progress
// messages count: a replaced actor that wakes up does not speak for its successor. A
// replica removed at runtime is forgotten whole, by its prefix.
health_monitor_actor::behavior_type health_monitor(health_monitor_actor::stateful_pointer<health_monitor_state> self,
                                                   std::chrono::milliseconds progress_timeout);

}  // namespace troupe
