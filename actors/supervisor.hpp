#pragma once
// A one-for-one supervisor: it starts its children, links to them, and restarts one that
// fails (any exit but a normal shutdown) after a backoff. More than `max_restarts` within
// `window` escalates: the supervisor fails too, and its own supervisor takes over.
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "actors/actors.hpp"

namespace troupe {

struct child_spec {
  std::string name;
  std::function<caf::actor(caf::local_actor* parent)> start;
};

struct restart_policy {
  int max_restarts = 10;
  std::chrono::seconds window{60};
  std::chrono::milliseconds backoff{50};
};

struct supervisor_state {
  static inline const char* name = "supervisor";
  std::vector<child_spec> specs;
  std::map<std::string, caf::actor> children;
  std::map<std::string, std::deque<std::chrono::steady_clock::time_point>> restarts;
};

// Tells `health` about restarts and `listener` about every child (re)start, with its handle.
caf::behavior supervisor(caf::stateful_actor<supervisor_state>* self, std::vector<child_spec> specs,
                         restart_policy policy, health_monitor_actor health, caf::actor listener);

}  // namespace troupe
