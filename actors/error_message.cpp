#include "actors/error_message.hpp"

namespace troupe {

std::string error_message(const caf::error& e) {
  if (e.context().match_elements<std::string>()) return e.context().get_as<std::string>(0);
  return to_string(e);
}

}  // namespace troupe
