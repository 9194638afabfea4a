#pragma once
#include <caf/actor_system_config.hpp>

namespace troupe {

// Announces every message type of engine/messages.hpp and kv_messages.hpp to CAF, so
// they can be serialized to other nodes and printed in logs.
void add_message_types(caf::actor_system_config& config);

}  // namespace troupe
