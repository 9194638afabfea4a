#include "actors/health_monitor.hpp"

namespace troupe {

health_monitor_actor::behavior_type health_monitor(
    health_monitor_actor::stateful_pointer<health_monitor_state> self) {
  auto& components = self->state.components;
  auto now = [] { return std::chrono::steady_clock::now(); };
  self->set_down_handler([=, &components](caf::down_msg& msg) {
    for (auto& [name, c] : components)
      if (c.reporter == msg.source) {
        c.ready = false;
        c.reporter = nullptr;
      }
  });
  return {
      [=, &components](expect_atom, const std::string& name) { components[name].last_progress = now(); },
      [=, &components](ready_atom, const std::string& name) {
        auto& c = components[name];
        c.ready = true;
        c.last_progress = now();
        if (auto sender = self->current_sender()) {
          c.reporter = caf::actor_cast<caf::actor_addr>(sender);
          self->monitor(c.reporter);
        }
      },
      [=, &components](progress_atom, const std::string& name) { components[name].last_progress = now(); },
      [=, &components](restarted_atom, const std::string& name) {
        auto& c = components[name];
        c.ready = false;
        ++c.restarts;
      },
      [=, &components](health_atom) {
        std::vector<component_health> out;
        for (const auto& [name, c] : components)
          out.push_back({name, c.ready, std::chrono::duration<double>(now() - c.last_progress).count(), c.restarts});
        return out;
      },
  };
}

}  // namespace troupe
