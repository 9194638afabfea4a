#include "actors/expert_group.hpp"

namespace troupe {

expert_group_actor::behavior_type expert_group(expert_group_actor::stateful_pointer<expert_group_state> self,
                                               expert_group_options options, experts_attacher attach,
                                               health_monitor_actor health) {
  self->attach_functor(attach(options.name, options.first_expert, options.last_expert));
  self->send(health, ready_atom::value, options.name);
  return {
      [=](crash_atom) { self->quit(caf::make_error(caf::sec::runtime_error, "crash drill")); },
  };
}

}  // namespace troupe
