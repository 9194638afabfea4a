#include <cstdio>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "model/test_model.hpp"

namespace troupe::cli {

int make_test_model_command(int argc, char** argv) {
  auto a = args::parse(argc, argv, {"--no-norm-topk-prob"});
  if (!a) {
    std::fprintf(stderr, "troupe make-test-model: %s\n", a.err().message.c_str());
    return 2;
  }
  test_model_options o;
  auto out = a->take("--out");
  std::string failure;
  auto take = [&](const char* flag, int& field) {
    auto v = a->take_int(flag, field);
    if (v)
      field = *v;
    else if (failure.empty())
      failure = v.err().message;
  };
  take("--layers", o.layers);
  take("--hidden", o.hidden);
  take("--heads", o.heads);
  take("--kv-heads", o.kv_heads);
  take("--head-dim", o.head_dim);
  take("--experts", o.experts);
  take("--top-k", o.top_k);
  take("--moe-intermediate", o.moe_intermediate);
  take("--intermediate", o.intermediate);
  take("--vocab", o.vocab);
  int seed = 1, shard_mb = 64;
  take("--seed", seed);
  take("--shard-mb", shard_mb);
  o.seed = uint64_t(seed);
  o.max_shard_bytes = size_t(shard_mb) << 20;
  if (auto layers = a->take_int_list("--mlp-only-layers"))
    o.mlp_only_layers = *layers;
  else
    failure = layers.err().message;
  o.norm_topk_prob = !a->take_switch("--no-norm-topk-prob");
  if (auto dir = a->take("--tokenizer-from")) o.tokenizer_dir = *dir;
  if (auto s = a->finish(); !s && failure.empty()) failure = s.err().message;
  if (!out && failure.empty()) failure = "--out DIR is required";
  if (!failure.empty()) {
    std::fprintf(stderr, "troupe make-test-model: %s\n", failure.c_str());
    return 2;
  }
  if (auto s = make_test_model(*out, o); !s) {
    std::fprintf(stderr, "troupe make-test-model: %s\n", s.err().message.c_str());
    return 1;
  }
  std::printf("wrote a random-weight qwen3_moe checkpoint to %s\n", out->c_str());
  return 0;
}

}  // namespace troupe::cli
