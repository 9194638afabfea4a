// Checkpoint loading: round trips, and a clear error for each kind of broken checkpoint.
#define BOOST_TEST_MODULE safetensors
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <fstream>

#include "model/moe_model.hpp"
#include "model/safetensors.hpp"
#include "model/safetensors_writer.hpp"
#include "model/test_model.hpp"
#include "tests/support/source_dir.hpp"
#include "tests/support/temp_dir.hpp"

using namespace troupe;
namespace fs = std::filesystem;

namespace {

test_model_options tiny(size_t shard_bytes) {
  test_model_options o;
  o.layers = 2;
  o.hidden = 16;
  o.heads = 2;
  o.kv_heads = 1;
  o.head_dim = 8;
  o.experts = 4;
  o.top_k = 2;
  o.moe_intermediate = 8;
  o.intermediate = 24;
  o.vocab = 64;
  o.mlp_only_layers = {1};
  o.max_shard_bytes = shard_bytes;
  return o;
}

// The shard files of a sharded checkpoint, in order.
std::vector<fs::path> shards(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("model-", 0) == 0) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  BOOST_REQUIRE(files.size() >= 3);
  return files;
}

std::string load_error(const fs::path& dir) {
  auto m = load_model(dir);
  BOOST_REQUIRE(!m);
  return m.err().message;
}

bool contains(const std::string& text, const std::string& part) {
  BOOST_TEST_MESSAGE(text);
  return text.find(part) != std::string::npos;
}

// A raw safetensors file with the given header text and data size.
void write_raw(const fs::path& path, const std::string& header, size_t data_bytes) {
  std::ofstream out(path, std::ios::binary);
  uint64_t len = header.size();
  out.write(reinterpret_cast<const char*>(&len), 8);
  out << header << std::string(data_bytes, '\x01');
}

std::string open_error(const std::string& header, size_t data_bytes) {
  test::temp_dir dir("raw");
  write_raw(dir.path() / "model.safetensors", header, data_bytes);
  auto c = checkpoint::open(dir.path());
  BOOST_REQUIRE(!c);
  return c.err().message;
}

}  // namespace

BOOST_AUTO_TEST_CASE(single_file_and_sharded_checkpoints_load) {
  for (size_t shard_bytes : {size_t(1) << 30, size_t(2048)}) {
    test::temp_dir dir("ok");
    BOOST_REQUIRE(make_test_model(dir.path(), tiny(shard_bytes)));
    auto c = checkpoint::open(dir.path());
    BOOST_REQUIRE(c);
    BOOST_TEST((c->file_count() > 1) == (shard_bytes == 2048));
    const tensor_entry* t = c->find("model.layers.0.mlp.experts.3.down_proj.weight");
    BOOST_REQUIRE(t);
    BOOST_TEST((t->shape == std::vector<int64_t>{16, 8}));
    BOOST_TEST((t->type == dtype::bf16));
    BOOST_TEST(bool(load_model(dir.path())));
  }
}

BOOST_AUTO_TEST_CASE(missing_shard_is_named) {
  test::temp_dir dir("missing_shard");
  BOOST_REQUIRE(make_test_model(dir.path(), tiny(2048)));
  const fs::path second = shards(dir.path())[1];
  fs::remove(second);
  BOOST_TEST(contains(load_error(dir.path()), "lists shard " + second.filename().string() + ", which is missing"));
}

BOOST_AUTO_TEST_CASE(truncated_shard_is_named) {
  test::temp_dir dir("truncated");
  BOOST_REQUIRE(make_test_model(dir.path(), tiny(2048)));
  const fs::path shard = shards(dir.path())[2];
  fs::resize_file(shard, fs::file_size(shard) - 10);
  std::string e = load_error(dir.path());
  BOOST_TEST(contains(e, shard.string()));
  BOOST_TEST(contains(e, "truncated file, or a header that lies about offsets"));
  fs::resize_file(shard, 5);
  BOOST_TEST(contains(load_error(dir.path()), "too short to be a safetensors file"));
}

BOOST_AUTO_TEST_CASE(headers_that_lie_are_rejected) {
  BOOST_TEST(contains(open_error(R"({"a":{"dtype":"BF16","shape":[4],"data_offsets":[0,64]}})", 8),
                      "tensor a: data_offsets end at byte 64 but the file holds 8 bytes of data"));
  BOOST_TEST(contains(open_error(R"({"a":{"dtype":"BF16","shape":[4],"data_offsets":[0,6]}})", 8),
                      "tensor a: shape and dtype need 8 bytes but data_offsets span 6"));
  BOOST_TEST(contains(open_error(R"({"a":{"dtype":"BF16","shape":[4],"data_offsets":[6,2]}})", 8),
                      "data_offsets begin after they end"));
  BOOST_TEST(contains(open_error(R"({"a":{"dtype":"I8","shape":[8],"data_offsets":[0,8]}})", 8),
                      "tensor a: dtype I8 is not supported (F32, F16, BF16 are)"));
  BOOST_TEST(contains(open_error(R"({"a":{"dtype":"BF16","shape":[-4],"data_offsets":[0,8]}})", 8),
                      "shape must be non-negative integers"));
  BOOST_TEST(
      contains(open_error(R"({"a":{"dtype":"BF16"}})", 8), "header entry needs dtype, shape and two data_offsets"));
  BOOST_TEST(contains(open_error("not json at all", 8), "header is not a JSON object"));
  test::temp_dir dir("huge_header");
  std::ofstream(dir.path() / "model.safetensors", std::ios::binary)
      << std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) << "{}";
  BOOST_TEST(contains(checkpoint::open(dir.path()).err().message, "header claims"));
}

BOOST_AUTO_TEST_CASE(index_that_points_to_the_wrong_shard_is_rejected) {
  test::temp_dir dir("bad_index");
  BOOST_REQUIRE(make_test_model(dir.path(), tiny(2048)));
  const fs::path index = dir.path() / "model.safetensors.index.json";
  std::ifstream in(index);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto files = shards(dir.path());
  const std::string first = files[0].filename().string(), second = files[1].filename().string();
  const std::string from = "\"model.embed_tokens.weight\": \"" + first + "\"";
  auto at = text.find(from);
  BOOST_REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), "\"model.embed_tokens.weight\": \"" + second + "\"");
  std::ofstream(index) << text;
  BOOST_TEST(contains(load_error(dir.path()),
                      "says tensor model.embed_tokens.weight is in " + second + ", but that shard does not hold it"));
}

namespace {

// The load error of DIR's checkpoint copied without tensor `drop` and with the first two
// dims of tensor `reshape` swapped.
std::string rewritten_load_error(const fs::path& dir, const std::string& drop, const std::string& reshape) {
  auto c = checkpoint::open(dir);
  BOOST_REQUIRE(c);
  std::vector<tensor_to_write> tensors;
  for (const auto& [name, t] : c->tensors()) {
    if (name == drop) continue;
    tensor_to_write w{name, t.type, t.shape,
                      std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(t.data),
                                           reinterpret_cast<const uint8_t*>(t.data) + t.nbytes)};
    if (name == reshape) std::swap(w.shape[0], w.shape[1]);
    tensors.push_back(std::move(w));
  }
  test::temp_dir out("rewritten");
  fs::copy_file(dir / "config.json", out.path() / "config.json");
  BOOST_REQUIRE(write_checkpoint(out.path(), tensors, size_t(1) << 30));
  return load_error(out.path());
}

}  // namespace

BOOST_AUTO_TEST_CASE(missing_tensor_and_wrong_shape_name_the_tensor) {
  test::temp_dir dir("bad_tensor");
  BOOST_REQUIRE(make_test_model(dir.path(), tiny(size_t(1) << 30)));
  BOOST_TEST(rewritten_load_error(dir.path(), "model.layers.0.mlp.experts.3.up_proj.weight", "") ==
             "checkpoint is missing tensor model.layers.0.mlp.experts.3.up_proj.weight");
  BOOST_TEST(contains(rewritten_load_error(dir.path(), "", "model.layers.1.mlp.down_proj.weight"),
                      "tensor model.layers.1.mlp.down_proj.weight has shape [24, 16], the config needs [16, 24]"));
}

// A Qwen3.5 checkpoint's linear-attention, shared-expert and gated-attention tensors are
// looked up under model.language_model. and held to the config's shapes too.
BOOST_AUTO_TEST_CASE(qwen3_5_tensors_missing_or_misshapen_are_named) {
  const fs::path dir = test::source_dir() / "tests/golden/fixtures/qwen3_5_moe_full_sharded";
  const std::string p = "model.language_model.layers.";
  for (const std::string& name : {p + "2.linear_attn.A_log", p + "1.linear_attn.conv1d.weight",
                                  p + "3.mlp.shared_expert_gate.weight", p + "0.mlp.shared_expert.up_proj.weight"})
    BOOST_TEST(rewritten_load_error(dir, name, "") == "checkpoint is missing tensor " + name);
  // q_proj carries each head's output gate: [4 heads x 2 x 32, 64].
  BOOST_TEST(contains(rewritten_load_error(dir, "", p + "3.self_attn.q_proj.weight"),
                      "tensor " + p + "3.self_attn.q_proj.weight has shape [64, 256], the config needs [256, 64]"));
}

BOOST_AUTO_TEST_CASE(unknown_architecture_and_missing_files_are_errors) {
  test::temp_dir dir("arch");
  BOOST_TEST(contains(load_error(dir.path()), "config.json: cannot open"));
  BOOST_REQUIRE(make_test_model(dir.path(), tiny(size_t(1) << 30)));
  fs::remove(dir.path() / "model.safetensors");
  BOOST_TEST(contains(load_error(dir.path()), "no model.safetensors or model.safetensors.index.json"));
  std::ofstream(dir.path() / "config.json") << R"({"model_type": "mixtral"})";
  BOOST_TEST(contains(load_error(dir.path()), "unknown architecture (model_type \"mixtral\")"));
}
