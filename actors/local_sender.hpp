#pragma once
// Whether the message an actor handles now came from an actor of this process. Drills
// (crash, hang) come only from here; a peer on a control port is refused them.
#include <caf/all.hpp>

namespace troupe {

template <class Self>
bool from_this_process(Self* self) {
  const auto& sender = self->current_sender();
  return sender != nullptr && sender->node() == self->node();
}

}  // namespace troupe
