#pragma once
// A GPU stage's control plane to the expert groups it reaches over NCCL (the expert_peers
// of transport/expert_parallel.hpp): the groups' actors, as the scheduler last named them,
// and the join and step messages to them. Used from the stage's thread; a restarted stage
// keeps the object, and hears every group's actor again.
#include <string>
#include <vector>

#include "actors/actors.hpp"
#include "transport/expert_parallel.hpp"

namespace troupe {

class expert_peer_handles final : public expert_peers {
 public:
  // Rank r + 1 is the replica's expert group groups[r], named names[r] in messages.
  expert_peer_handles(std::vector<int> groups, std::vector<std::string> names);

  // The scheduler's news that the replica's group `group` runs as `handle`; a group this
  // stage does not reach is none of its business.
  void place(int group, const caf::actor& handle);

  uint64_t generation() const override { return generation_; }
  std::string missing() const override;
  void invite(const expert_session& session) override;
  void announce(const expert_step& step) override;

 private:
  std::vector<int> groups_;
  std::vector<std::string> names_;
  std::vector<caf::actor> handles_;  // by rank - 1; null until placed
  uint64_t generation_ = 0;
};

}  // namespace troupe
