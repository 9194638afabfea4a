#pragma once
#include <filesystem>
#include <string>

#include "base/result.hpp"

namespace troupe {

// The whole file as text, or an error naming it.
result<std::string> read_text_file(const std::filesystem::path& path);

}  // namespace troupe
