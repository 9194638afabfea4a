#include "actors/expert_group.hpp"

#include <cstdio>

#include "actors/local_sender.hpp"

namespace troupe {
namespace {

using self_ptr = expert_group_actor::stateful_pointer<expert_group_state>;

// A stage elsewhere asked this group for something it cannot do: said, not swallowed.
void report(self_ptr self, const std::string& why) {
  std::fprintf(stderr, "troupe: %s: %s\n", self->state.group.c_str(), why.c_str());
}

}  // namespace

expert_group_actor::behavior_type expert_group(self_ptr self, expert_group_options options, experts_attacher attach,
                                               health_monitor_actor health) {
  auto& st = self->state;
  st.group = options.name;
  self->attach_functor(attach(options.name, options.first_expert, options.last_expert));
  if (options.make_server) {
    auto server = options.make_server();
    if (server)
      st.server = std::move(*server);
    else  // e.g. no device memory for its buffers: its supervisor decides
      self->quit(caf::make_error(caf::sec::runtime_error, options.name + ": " + server.err().message));
  }
  if (!options.make_server || st.server) self->send(health, ready_atom::value, options.name);
  return {
      [=](expert_join_atom, const expert_session& session) {
        auto& server = self->state.server;
        if (!server) return report(self, "asked to join a stage's communicator, but it serves no stage on another GPU");
        if (auto joined = server->join(session); !joined) report(self, joined.err().message);
      },
      [=](expert_step_atom, const expert_step& step) {
        auto& server = self->state.server;
        if (!server) return report(self, "asked to serve a step, but it serves no stage on another GPU");
        if (auto served = server->serve(step); !served) report(self, served.err().message);
      },
      [=](crash_atom) {
        if (from_this_process(self)) self->quit(caf::make_error(caf::sec::runtime_error, "crash drill"));
      },
  };
}

child_spec expert_group_child(expert_group_options options, experts_attacher attach, health_monitor_actor health) {
  std::string name = options.name;
  return {std::move(name), [options, attach, health](caf::local_actor* parent) {
            return caf::actor_cast<caf::actor>(parent->spawn<caf::detached>(expert_group, options, attach, health));
          }};
}

}  // namespace troupe
