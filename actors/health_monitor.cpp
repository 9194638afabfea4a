#include "actors/health_monitor.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace troupe {
namespace {

using self_ptr = health_monitor_actor::stateful_pointer<health_monitor_state>;
using component = health_monitor_state::component;
using clock_type = std::chrono::steady_clock;

// How often stuck components are looked for: they are declared within this of the timeout.
constexpr auto check_interval = std::chrono::milliseconds(100);

// What a component's name has before its last '/': its replica's prefix ("main/"), or "".
std::string group_of(const std::string& name) {
  const size_t slash = name.rfind('/');
  return slash == std::string::npos ? "" : name.substr(0, slash + 1);
}

// Since when every component of `group` has been ready: `now` while one is not.
clock_type::time_point whole_since(const health_monitor_state& st, const std::string& group,
                                   clock_type::time_point now) {
  for (const auto& [name, c] : st.components)
    if (!c.ready && group_of(name) == group) return now;
  auto it = st.unsettled.find(group);
  return it == st.unsettled.end() ? clock_type::time_point{} : it->second;
}

// The progress timeout, doubled for each time the component was declared stuck without
// finishing a step since: a restart that did not help (a link too slow for any step to
// finish in time) is not repeated at the same pace.
std::chrono::milliseconds timeout_of(const health_monitor_state& st, const component& c) {
  return st.progress_timeout * (1 << std::min(c.strikes, 3));
}

// In one step past its timeout, counted from when its replica was last whole: a stage
// that waits on a peer which is down (a node restarting) waits, it is not stuck.
bool stuck_now(const health_monitor_state& st, const std::string& name, const component& c,
               clock_type::time_point now) {
  if (c.stuck) return true;
  if (!c.busy_since) return false;
  return now - std::max(*c.busy_since, whole_since(st, group_of(name), now)) > timeout_of(st, c);
}

// The component `name` when the current message comes from the actor that said it is
// ready; null for anyone else's (a replaced actor that woke up).
component* from_reporter(self_ptr self, const std::string& name) {
  auto it = self->state.components.find(name);
  if (it == self->state.components.end() || !it->second.reporter) return nullptr;
  auto sender = self->current_sender();
  if (!sender || caf::actor_cast<caf::actor_addr>(sender) != it->second.reporter) return nullptr;
  return &it->second;
}

void declare_stuck(self_ptr self, const std::string& name, component& c) {
  auto& st = self->state;
  c.stuck = true;
  const double in_step = std::chrono::duration<double>(clock_type::now() - *c.busy_since).count();
  std::fprintf(stderr,
               "troupe: %s has been in one step for %.1f s without progress (progress timeout %lld ms%s): "
               "declared failed%s\n",
               name.c_str(), in_step, static_cast<long long>(timeout_of(st, c).count()),
               c.strikes ? ", doubled for each failure since its last finished step" : "",
               c.progressed ? "" : "; its supervisor does not replace it again, as it has finished no step since");
  ++c.strikes;
  for (const caf::actor& s : st.subscribers) caf::anon_send(s, stuck_atom::value, name);
  if (std::exchange(c.progressed, false) && c.supervisor) caf::anon_send(c.supervisor, stuck_atom::value, name);
}

}  // namespace

health_monitor_actor::behavior_type health_monitor(self_ptr self, std::chrono::milliseconds progress_timeout) {
  self->state.progress_timeout = progress_timeout;
  auto& components = self->state.components;
  auto now = [] { return clock_type::now(); };
  self->set_down_handler([=, &components](caf::down_msg& msg) {
    for (auto& [name, c] : components)
      if (c.reporter == msg.source) {
        c.ready = false;
        c.reporter = nullptr;
        c.busy_since.reset();
      }
  });
  self->delayed_send(self, check_interval, tick_atom::value);
  return {
      [=, &components](expect_atom, const std::string& name) {
        auto& c = components[name];
        c.last_progress = now();
        if (auto sender = self->current_sender()) c.supervisor = caf::actor_cast<caf::actor>(sender);
      },
      [=, &components](ready_atom, const std::string& name) {
        auto& c = components[name];
        c.ready = true;
        c.last_progress = now();
        c.busy_since.reset();
        c.stuck = false;
        if (auto sender = self->current_sender()) {
          c.reporter = caf::actor_cast<caf::actor_addr>(sender);
          self->monitor(c.reporter);
        }
      },
      [=](busy_atom, const std::string& name, bool busy) {
        if (component* c = from_reporter(self, name)) {
          if (busy) {
            c->busy_since = now();
          } else {  // a step that failed has ended: the stage waits for its next, it is not stuck
            c->busy_since.reset();
            c->stuck = false;
          }
        }
      },
      [=](progress_atom, const std::string& name) {
        if (component* c = from_reporter(self, name)) {
          c->last_progress = now();
          c->busy_since.reset();
          c->stuck = false;  // it was slow, not dead; nobody replaced it meanwhile
          c->progressed = true;
          c->strikes = 0;
        }
      },
      [=, &components](restarted_atom, const std::string& name) {
        auto& c = components[name];
        c.ready = false;
        c.busy_since.reset();
        ++c.restarts;
      },
      [=](subscribe_atom, const caf::actor& subscriber) { self->state.subscribers.push_back(subscriber); },
      [=, &components](tick_atom) {
        const auto t = now();
        for (const auto& [name, c] : components)
          if (!c.ready) self->state.unsettled[group_of(name)] = t;
        for (auto& [name, c] : components)
          if (c.ready && !c.stuck && stuck_now(self->state, name, c, t)) declare_stuck(self, name, c);
        self->delayed_send(self, check_interval, tick_atom::value);
      },
      [=, &components](forget_atom, const std::string& prefix) {
        for (auto it = components.begin(); it != components.end();)
          it = it->first.rfind(prefix, 0) == 0 ? components.erase(it) : std::next(it);
        self->state.unsettled.erase(prefix);
      },
      [=, &components](health_atom) {
        std::vector<component_health> out;
        const auto t = now();
        for (const auto& [name, c] : components) {
          // Said until a replacement is ready: why it is down, while it restarts.
          const bool stuck = c.stuck || (c.ready && stuck_now(self->state, name, c, t));
          out.push_back(
              {name, c.ready && !stuck, std::chrono::duration<double>(t - c.last_progress).count(), c.restarts, stuck});
        }
        return out;
      },
  };
}

}  // namespace troupe
