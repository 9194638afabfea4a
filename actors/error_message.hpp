#pragma once
#include <string>

#include <caf/all.hpp>

namespace troupe {

// The message of an error a troupe actor answered with: the text it was made with, else
// CAF's rendering.
std::string error_message(const caf::error& e);

}  // namespace troupe
