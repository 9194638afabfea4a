#pragma once
// The golden fixtures made in the CUDA kernels' shapes (they record router margins too),
// which the GPU tests run, and a fixture's weights in GPU memory with every expert attached.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include "model/cuda/gpu_weights.hpp"
#include "tests/support/source_dir.hpp"
#include "transport/gpu_experts.hpp"

namespace troupe::test {

inline nlohmann::json read_golden(const std::filesystem::path& dir) {
  std::ifstream in(dir / "golden.json");
  return nlohmann::json::parse(in);
}

// The fixtures recorded for a bf16 engine (with router margins) of an architecture the CUDA
// engine runs: qwen3_moe so far.
inline std::vector<std::filesystem::path> gpu_fixtures() {
  std::vector<std::filesystem::path> dirs;
  for (const auto& e : std::filesystem::directory_iterator(source_dir() / "tests/golden/fixtures")) {
    if (!std::filesystem::exists(e.path() / "golden.json") || !read_golden(e.path()).contains("router_margin")) continue;
    std::ifstream config(e.path() / "config.json");
    if (nlohmann::json::parse(config).value("model_type", "") == "qwen3_moe") dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

struct engine_parts {
  std::shared_ptr<const gpu_weights> weights;
  std::shared_ptr<gpu_experts> experts;
};

inline engine_parts load_engine(const std::filesystem::path& dir) {
  auto w = load_gpu_weights(dir, false);
  BOOST_REQUIRE_MESSAGE(w, (w ? std::string() : w.err().message));
  auto experts = std::make_shared<gpu_experts>(*w);
  experts->attach("experts", 0, (*w)->config.num_experts);
  return {*w, experts};
}

}  // namespace troupe::test
