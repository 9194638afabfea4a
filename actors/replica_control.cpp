#include "actors/replica_control.hpp"

namespace troupe {

replica_control_actor::behavior_type replica_control(replica_control_actor::stateful_pointer<replica_control_state> self,
                                                     replica_control_functions functions) {
  self->state.functions = std::move(functions);
  return {
      [=](add_replica_atom, int r) -> caf::result<scheduler_actor> {
        auto s = self->state.functions.start(size_t(r));
        if (!s) return caf::make_error(caf::sec::runtime_error, s.err().message);
        return *s;
      },
      [=](remove_replica_atom, int r) -> caf::result<int> {
        auto n = self->state.functions.stop(size_t(r));
        if (!n) return caf::make_error(caf::sec::runtime_error, n.err().message);
        return *n;
      },
  };
}

std::string error_message(const caf::error& e) {
  if (e.context().match_elements<std::string>()) return e.context().get_as<std::string>(0);
  return to_string(e);
}

}  // namespace troupe
