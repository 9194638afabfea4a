// The CPU forward pass against transformers' own fp32 outputs on tiny random checkpoints
// (tests/golden/make_golden.py records them on the GPU machine).
#define BOOST_TEST_MODULE golden_parity
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <fstream>
#include <span>

#include <nlohmann/json.hpp>

#include "kernels/cpu/log_softmax.hpp"
#include "model/moe_model.hpp"
#include "model/safetensors_writer.hpp"
#include "model/single_sequence.hpp"
#include "tests/support/source_dir.hpp"
#include "tests/support/temp_dir.hpp"

using namespace troupe;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr double logprob_tolerance = 1e-3;
constexpr double margin_threshold = 1e-3;  // below this transformers' own choice is a coin toss

std::vector<fs::path> fixtures() {
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(test::source_dir() / "tests/golden/fixtures"))
    if (fs::exists(e.path() / "golden.json")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

json read_golden(const fs::path& dir) {
  std::ifstream in(dir / "golden.json");
  return json::parse(in);
}

std::vector<float> log_probs(const std::vector<float>& logits, size_t row, int vocab) {
  std::vector<float> lp(static_cast<size_t>(vocab));
  cpu::log_softmax(logits.data() + row * size_t(vocab), vocab, lp.data());
  return lp;
}

// Every recorded top-5 (id, log-prob) of one position, against ours.
void check_top5(const std::vector<float>& lp, const json& ids, const json& values, const std::string& where) {
  for (size_t j = 0; j < ids.size(); ++j) {
    const int id = ids[j].get<int>();
    BOOST_TEST_CONTEXT(where << " rank " << j << " token " << id)
    BOOST_TEST(std::abs(lp[size_t(id)] - values[j].get<double>()) < logprob_tolerance);
  }
}

// The prompt in one call, or in pieces of the fixture's prefill_chunk tokens (so recurrent
// and KV state carry between calls), then greedy decode with the cache, held to every
// step whose transformers margin is large enough to call.
void check_model(const moe_model& model, const json& g, const std::string& name) {
  const int vocab = model.config().vocab_size;
  std::vector<int> prompt = g["prompt"].get<std::vector<int>>();
  single_sequence sequence(model, int(prompt.size()) + 32);
  const size_t piece = g.contains("prefill_chunk") ? g["prefill_chunk"].get<size_t>() : prompt.size();
  std::vector<float> logits;
  for (size_t at = 0; at < prompt.size(); at += piece) {
    auto part = sequence.forward(std::span<const int>(prompt).subspan(at, std::min(piece, prompt.size() - at)),
                                 /*all_logits=*/true);
    logits.insert(logits.end(), part.begin(), part.end());
  }
  for (size_t p = 0; p < prompt.size(); ++p)
    check_top5(log_probs(logits, p, vocab), g["prompt_top5_ids"][p], g["prompt_top5_logprobs"][p],
               name + " prompt position " + std::to_string(p));

  const auto greedy = g["greedy"].get<std::vector<int>>();
  const auto margins = g["greedy_margin"].get<std::vector<double>>();
  std::vector<float> last(logits.end() - vocab, logits.end());
  size_t compared = 0;
  for (size_t step = 0; step < greedy.size(); ++step) {
    auto lp = log_probs(last, 0, vocab);
    check_top5(lp, g["greedy_top5_ids"][step], g["greedy_top5_logprobs"][step],
               name + " greedy step " + std::to_string(step));
    const int ours = int(std::max_element(lp.begin(), lp.end()) - lp.begin());
    if (margins[step] <= margin_threshold) break;  // past here the two runs may diverge
    BOOST_TEST_CONTEXT(name << " greedy step " << step) BOOST_TEST(ours == greedy[step]);
    ++compared;
    last = sequence.forward(std::vector<int>{greedy[step]});
  }
  BOOST_TEST_MESSAGE(name << ": " << compared << " of " << greedy.size() << " greedy tokens compared");
  BOOST_TEST(compared >= 8);  // a fixture whose margins stop the check early proves little
}

}  // namespace

BOOST_AUTO_TEST_CASE(fixtures_exist) { BOOST_TEST(fixtures().size() >= 3); }

// Qwen3.5 in both layouts: as published (text_config beside a vision tower, weights under
// model.language_model.*, an mtp head to skip) and text-only; prompts longer than the
// prefill chunk, so the recurrent and conv states carry between calls.
BOOST_AUTO_TEST_CASE(qwen3_5_fixtures_cover_both_layouts) {
  int full = 0, text = 0;
  for (const auto& dir : fixtures()) {
    std::ifstream in(dir / "config.json");
    const std::string type = json::parse(in).value("model_type", "");
    if (type != "qwen3_5_moe" && type != "qwen3_5_moe_text") continue;
    const json g = read_golden(dir);
    BOOST_TEST(g["prompt"].size() > g["prefill_chunk"].get<size_t>());
    auto ckpt = checkpoint::open(dir);
    BOOST_REQUIRE(ckpt);
    int visual = 0, mtp = 0, nested = 0;
    for (const auto& [name, t] : ckpt->tensors()) {
      visual += name.starts_with("model.visual.");
      mtp += name.starts_with("mtp.");
      nested += name.starts_with("model.language_model.");
    }
    BOOST_TEST(mtp > 0);
    if (type == "qwen3_5_moe") {
      ++full;
      BOOST_TEST(visual > 0);
      BOOST_TEST(nested > 0);
    } else {
      ++text;
      BOOST_TEST(visual == 0);
    }
  }
  BOOST_TEST(full >= 1);
  BOOST_TEST(text >= 1);
}

BOOST_AUTO_TEST_CASE(cpu_forward_matches_transformers) {
  for (const auto& dir : fixtures()) {
    auto model = load_model(dir);
    BOOST_REQUIRE_MESSAGE(model, (model ? std::string() : model.err().message));
    check_model(**model, read_golden(dir), dir.filename().string());
  }
}

// The same weights stored as f32 and f16 give the same answers: the loader and matmul
// handle every checkpoint dtype. bf16 values are exact in f32 and in f16 at these scales.
BOOST_AUTO_TEST_CASE(f32_and_f16_copies_of_a_checkpoint_match_transformers) {
  const fs::path dir = fixtures().front();
  auto ckpt = checkpoint::open(dir);
  BOOST_REQUIRE(ckpt);
  for (dtype target : {dtype::f32, dtype::f16}) {
    std::vector<tensor_to_write> tensors;
    for (const auto& [name, t] : ckpt->tensors()) {
      tensor_to_write w{name, target, t.shape, {}};
      const size_t count = t.nbytes / dtype_size(t.type);
      w.bytes.resize(count * dtype_size(target));
      for (size_t i = 0; i < count; ++i) {
        const float v = load_as_f32(t.type, t.data, i);
        if (target == dtype::f32)
          std::memcpy(w.bytes.data() + 4 * i, &v, 4);
        else {
          const uint16_t h = f32_to_f16(v);
          std::memcpy(w.bytes.data() + 2 * i, &h, 2);
        }
      }
      tensors.push_back(std::move(w));
    }
    test::temp_dir out("dtype");
    fs::copy_file(dir / "config.json", out.path() / "config.json");
    BOOST_REQUIRE(write_checkpoint(out.path(), tensors, size_t(1) << 30));
    auto model = load_model(out.path());
    BOOST_REQUIRE_MESSAGE(model, (model ? std::string() : model.err().message));
    check_model(**model, read_golden(dir), std::string(dtype_name(target)) + " copy");
  }
}

// Published Qwen3.5 checkpoints store each layer's experts fused (experts.gate_up_proj
// [experts, 2 x inter, hidden], experts.down_proj [experts, hidden, inter]), where
// transformers saved the fixture per expert: the fixture rewritten so gives the same answers.
BOOST_AUTO_TEST_CASE(a_qwen3_5_checkpoint_with_fused_experts_matches_transformers) {
  const fs::path dir = test::source_dir() / "tests/golden/fixtures/qwen3_5_moe_full_sharded";
  auto ckpt = checkpoint::open(dir);
  BOOST_REQUIRE(ckpt);
  auto config = load_model_config(dir);
  BOOST_REQUIRE(config);
  auto bytes_of = [&](const std::string& name) {
    const tensor_entry* t = ckpt->find(name);
    BOOST_REQUIRE_MESSAGE(t, name);
    return std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(t->data),
                                reinterpret_cast<const uint8_t*>(t->data) + t->nbytes);
  };
  std::vector<tensor_to_write> tensors;
  for (const auto& [name, t] : ckpt->tensors())
    if (name.find(".mlp.experts.") == std::string::npos) tensors.push_back({name, t.type, t.shape, bytes_of(name)});
  const int64_t experts = config->num_experts, inter = config->moe_intermediate_size, hidden = config->hidden_size;
  for (int layer = 0; layer < config->num_layers; ++layer) {
    const std::string p = "model.language_model.layers." + std::to_string(layer) + ".mlp.experts.";
    tensor_to_write gate_up{p + "gate_up_proj", dtype::bf16, {experts, 2 * inter, hidden}, {}};
    tensor_to_write down{p + "down_proj", dtype::bf16, {experts, hidden, inter}, {}};
    for (int64_t e = 0; e < experts; ++e) {
      const std::string each = p + std::to_string(e) + ".";
      for (const char* part : {"gate_proj.weight", "up_proj.weight"}) {
        auto b = bytes_of(each + part);
        gate_up.bytes.insert(gate_up.bytes.end(), b.begin(), b.end());
      }
      auto b = bytes_of(each + "down_proj.weight");
      down.bytes.insert(down.bytes.end(), b.begin(), b.end());
    }
    tensors.push_back(std::move(gate_up));
    tensors.push_back(std::move(down));
  }
  test::temp_dir out("fused");
  fs::copy_file(dir / "config.json", out.path() / "config.json");
  BOOST_REQUIRE(write_checkpoint(out.path(), tensors, size_t(1) << 30));
  auto fused = checkpoint::open(out.path());
  BOOST_REQUIRE(fused);
  BOOST_TEST(fused->find("model.language_model.layers.0.mlp.experts.0.gate_proj.weight") == nullptr);
  auto model = load_model(out.path());
  BOOST_REQUIRE_MESSAGE(model, (model ? std::string() : model.err().message));
  check_model(**model, read_golden(dir), "fused experts");
}
