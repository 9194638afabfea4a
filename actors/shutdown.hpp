#pragma once
// Ending a set of actors the one way every owner does: an exit to each, then a wait for
// each to be down, bounded by a grace period so that a stuck actor cannot hold its owner.
#include <chrono>
#include <cstddef>
#include <vector>

#include <caf/all.hpp>

namespace troupe {

// Sends `user_shutdown` to each actor (null ones are skipped) and waits until each is down
// or `grace` has passed since the exits went out. Returns how many were not down in time.
// Other messages in `self`'s mailbox stay there.
size_t shutdown(caf::scoped_actor& self, const std::vector<caf::actor>& actors,
                std::chrono::milliseconds grace = std::chrono::hours(24));

}  // namespace troupe
