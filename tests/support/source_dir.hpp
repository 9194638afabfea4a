#pragma once
#include <cstdlib>
#include <filesystem>

namespace troupe::test {

// The repository root: $TROUPE_SOURCE_DIR when tests run from a copied bundle (the GPU
// machine), else the tree they were built from.
inline std::filesystem::path source_dir() {
  const char* env = std::getenv("TROUPE_SOURCE_DIR");
  return env ? std::filesystem::path(env) : std::filesystem::path(TROUPE_SOURCE_DIR);
}

}  // namespace troupe::test
