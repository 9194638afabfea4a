#pragma once
// A one-for-one supervisor: it starts its children, links to them, and restarts one that
// fails (any exit but a normal shutdown) after a backoff. More than `max_restarts` within
// `window` escalates: the supervisor fails too, and its own supervisor takes over. A child
// the health monitor declares stuck (in one step past the progress timeout) is replaced
// the same way when the policy says so: a CAF actor cannot be stopped while its handler
// blocks, so the stuck one is abandoned (unlinked, told to exit, which it does once its
// handler returns) and keeps its thread and memory until then.
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
  // Replace a stuck child in this process. Only where a new child's memory is its own: a
  // stage on the CPU (a GPU stage re-carves its predecessor's, which a stuck kernel may
  // still write; and a hung GPU needs its process restarted anyway). A cluster node's
  // process is restarted whole by its head instead.
  bool replace_stuck = false;
};

struct supervisor_state {
  static inline const char* name = "supervisor";
  std::vector<child_spec> specs;
  std::map<std::string, caf::actor> children;
  std::map<std::string, std::deque<std::chrono::steady_clock::time_point>> restarts;
};

// Tells `health` (unless null) about restarts and `listener` about every child (re)start,
// with its handle.
// Messages: `crash_atom, name` and `hang_atom, name, ms` pass a drill on to that child;
// `stuck_atom, name` (from the health monitor) replaces it when the policy says so.
caf::behavior supervisor(caf::stateful_actor<supervisor_state>* self, std::vector<child_spec> specs,
                         restart_policy policy, health_monitor_actor health, caf::actor listener);

}  // namespace troupe
