#include "actors/expert_peer_handles.hpp"

#include "base/check.hpp"

namespace troupe {

expert_peer_handles::expert_peer_handles(std::vector<int> groups, std::vector<std::string> names)
    : groups_(std::move(groups)), names_(std::move(names)), handles_(groups_.size()) {
  TROUPE_CHECK(groups_.size() == names_.size(), "a name for every expert group");
}

void expert_peer_handles::place(int group, const caf::actor& handle) {
  for (size_t r = 0; r < groups_.size(); ++r)
    if (groups_[r] == group && handles_[r] != handle) {
      handles_[r] = handle;
      ++generation_;
    }
}

std::string expert_peer_handles::missing() const {
  std::string names;
  for (size_t r = 0; r < handles_.size(); ++r)
    if (!handles_[r]) names += (names.empty() ? "" : ", ") + names_[r];
  return names;
}

void expert_peer_handles::invite(const expert_session& session) {
  TROUPE_CHECK(session.rank >= 1 && size_t(session.rank) <= handles_.size(), "an invitation to a rank of a peer");
  if (const caf::actor& to = handles_[size_t(session.rank - 1)]) caf::anon_send(to, expert_join_atom::value, session);
}

void expert_peer_handles::announce(const expert_step& step) {
  for (const caf::actor& to : handles_)
    if (to) caf::anon_send(to, expert_step_atom::value, step);
}

}  // namespace troupe
