#pragma once
// The golden fixtures made in the CUDA kernels' shapes (they record router margins too),
// which the GPU tests run, and a fixture's weights in GPU memory with every expert attached.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include "model/cuda/gpu_experts.hpp"
#include "model/cuda/gpu_weights.hpp"
#include "tests/support/source_dir.hpp"

namespace troupe::test {

inline nlohmann::json read_golden(const std::filesystem::path& dir) {
  std::ifstream in(dir / "golden.json");
  return nlohmann::json::parse(in);
}

// The fixtures made in the CUDA kernels' shapes for a bf16 engine (named gpu_*, with router
// margins): qwen3_moe ones from make_golden.py, qwen3_5_moe ones from make_golden_qwen3_5.py.
inline std::vector<std::filesystem::path> gpu_fixtures() {
  std::vector<std::filesystem::path> dirs;
  for (const auto& e : std::filesystem::directory_iterator(source_dir() / "tests/golden/fixtures")) {
    if (!e.path().filename().string().starts_with("gpu_") || !std::filesystem::exists(e.path() / "golden.json") ||
        !read_golden(e.path()).contains("router_margin"))
      continue;
    dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// Whether a fixture's model has Gated DeltaNet layers (qwen3_5_moe): its sequences need
// recurrent-state slots.
inline bool has_linear_layers(const nlohmann::json& golden) {
  const auto types = golden.value("layer_types", std::vector<std::string>{});
  return std::find(types.begin(), types.end(), "linear_attention") != types.end();
}

struct engine_parts {
  std::shared_ptr<const gpu_weights> weights;
  std::shared_ptr<gpu_experts> experts;
};

// DIR's weights (the checkpoint's, or dummy ones of its config), or a share of them, with
// one group attached: the share's expert group, or every expert.
inline engine_parts load_engine(const std::filesystem::path& dir, bool dummy = false, const weight_share& share = {}) {
  auto w = load_gpu_weights(dir, dummy, share);
  BOOST_REQUIRE_MESSAGE(w, (w ? std::string() : w.err().message));
  auto experts = std::make_shared<gpu_experts>(*w);
  const auto [first, last] = share.group_experts.value_or(std::pair{0, (*w)->config.num_experts});
  experts->attach("experts", first, last);
  return {*w, experts};
}

}  // namespace troupe::test
