#include "actors/supervisor.hpp"

#include <algorithm>
#include <cstdio>

#include "actors/local_sender.hpp"

namespace troupe {
namespace {

using restart_atom = caf::atom_constant<caf::atom("restart")>;
using self_ptr = caf::stateful_actor<supervisor_state>*;

void start_child(self_ptr self, const child_spec& spec, const caf::actor& listener) {
  caf::actor child = spec.start(self);
  // Linked so that children end with their supervisor; monitored because a down message
  // arrives however a child ends (an actor killed by an exit message from its linked
  // supervisor unlinks before dying, so no exit message comes back).
  self->link_to(child);
  self->monitor(child);
  self->state.children[spec.name] = child;
  if (listener) self->send(listener, child_up_atom::value, spec.name, child);
}

// Child `name` is gone: started again after the backoff, unless it failed too often within
// the window, which fails the supervisor.
void restart_later(self_ptr self, const std::string& name, const restart_policy& policy,
                   const health_monitor_actor& health) {
  auto& times = self->state.restarts[name];
  const auto now = std::chrono::steady_clock::now();
  while (!times.empty() && now - times.front() > policy.window) times.pop_front();
  if (int(times.size()) >= policy.max_restarts) {
    self->quit(caf::make_error(caf::sec::runtime_error, name + " failed " + std::to_string(times.size() + 1) +
                                                            " times within the restart window"));
    return;
  }
  times.push_back(now);
  if (health) self->send(health, restarted_atom::value, name);
  self->delayed_send(self, policy.backoff, restart_atom::value, name);
}

}  // namespace

caf::behavior supervisor(self_ptr self, std::vector<child_spec> specs, restart_policy policy,
                         health_monitor_actor health, caf::actor listener) {
  self->state.specs = std::move(specs);
  for (const auto& spec : self->state.specs) {
    if (health) self->send(health, expect_atom::value, spec.name);
    start_child(self, spec, listener);
  }
  // Exits from children are trapped (their down messages drive restarts); any other exit
  // is our own shutdown or failure.
  self->set_exit_handler([=](caf::exit_msg& msg) {
    for (const auto& [name, child] : self->state.children)
      if (child.address() == msg.source) return;
    self->quit(msg.reason);
  });
  self->set_down_handler([=](caf::down_msg& msg) {
    auto& st = self->state;
    auto it = std::find_if(st.children.begin(), st.children.end(),
                           [&](const auto& c) { return c.second.address() == msg.source; });
    if (it == st.children.end()) return;
    const std::string name = it->first;
    st.children.erase(it);
    if (msg.reason == caf::exit_reason::normal || msg.reason == caf::exit_reason::user_shutdown) return;
    restart_later(self, name, policy, health);
  });
  return {
      // Chaos drills: make one child fail as a crash would.
      [=](crash_atom, const std::string& name) {
        if (!from_this_process(self)) return;
        auto it = self->state.children.find(name);
        if (it != self->state.children.end()) self->send_exit(it->second, caf::sec::runtime_error);
      },
      // Chaos drills: make one child (a stage) block its next step.
      [=](hang_atom, const std::string& name, int ms) {
        if (!from_this_process(self)) return;
        auto it = self->state.children.find(name);
        if (it != self->state.children.end()) self->send(it->second, hang_atom::value, ms);
      },
      [=](stuck_atom, const std::string& name) {
        auto it = self->state.children.find(name);
        if (!policy.replace_stuck || it == self->state.children.end()) return;
        const caf::actor stuck = it->second;
        self->state.children.erase(it);
        self->demonitor(stuck);
        self->unlink_from(stuck);
        self->send_exit(stuck, caf::exit_reason::kill);
        std::fprintf(stderr,
                     "troupe: %s is stuck: replacing it (the stuck one keeps its thread and memory until "
                     "its step returns)\n",
                     name.c_str());
        restart_later(self, name, policy, health);
      },
      [=](restart_atom, const std::string& name) {
        for (const auto& spec : self->state.specs)
          if (spec.name == name && !self->state.children.count(name)) start_child(self, spec, listener);
      },
  };
}

}  // namespace troupe
