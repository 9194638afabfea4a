#pragma once
// The golden fixtures made in the CUDA kernels' shapes (they record router margins too),
// which the GPU tests run.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/source_dir.hpp"

namespace troupe::test {

inline nlohmann::json read_golden(const std::filesystem::path& dir) {
  std::ifstream in(dir / "golden.json");
  return nlohmann::json::parse(in);
}

inline std::vector<std::filesystem::path> gpu_fixtures() {
  std::vector<std::filesystem::path> dirs;
  for (const auto& e : std::filesystem::directory_iterator(source_dir() / "tests/golden/fixtures"))
    if (std::filesystem::exists(e.path() / "golden.json") && read_golden(e.path()).contains("router_margin"))
      dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

}  // namespace troupe::test
