#include "actors/shutdown.hpp"

#include <algorithm>

namespace troupe {

size_t shutdown(caf::scoped_actor& self, const std::vector<caf::actor>& actors, std::chrono::milliseconds grace) {
  std::vector<caf::actor_addr> running;
  for (const caf::actor& a : actors) {
    if (!a) continue;
    self->monitor(a);
    self->send_exit(a, caf::exit_reason::user_shutdown);
    running.push_back(a.address());
  }
  const auto deadline = std::chrono::steady_clock::now() + grace;
  bool timed_out = false;
  while (!running.empty() && !timed_out) {
    const auto left =
        std::max(std::chrono::milliseconds(0),
                 std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
    self->receive(
        [&](const caf::down_msg& down) {
          // The caller monitors nothing else meanwhile: any other down message is dropped.
          std::erase(running, down.source);
        },
        caf::after(left) >> [&] { timed_out = true; });
  }
  for (const auto& a : running) self->demonitor(a);
  return running.size();
}

}  // namespace troupe
