// Expert parallelism across two GPUs against one GPU. A random model (dummy weights made
// from a config alone: the same bits on both GPUs) is decoded greedily by one runner with
// every expert on cuda:0, and by runners whose MoE layers keep experts [0, 8) on cuda:0
// and reach [8, 16) on cuda:1, in another process (nccl_expert_peer: nccl_expert_server)
// over NCCL (nccl_experts). The tokens, log-probs and top-5 must be the same to the bit:
// prefills in 64-row tiles, decode steps on moe_gemv and on 16-row tiles (a padded batch
// bucket), as one stage and as two (each stage its own communicator with the peer). Then
// the failures: a peer killed during a step fails the step within the wait timeout, never
// a hang, and with a new peer the runner joins again and answers as before. It needs a
// machine with two GPUs and fails on any other.
#define BOOST_TEST_MODULE nccl_experts
#include <boost/test/unit_test.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>

#include "kernels/cuda/check.cuh"
#include "model/cuda/gpu_step_runner.hpp"
#include "tests/model/pipeline_decode.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/transport/child_process.hpp"
#include "tests/transport/echo_peer_protocol.hpp"
#include "transport/nccl_experts.hpp"

using namespace troupe;
using namespace std::chrono_literals;
using std::chrono::steady_clock;

namespace {

constexpr int experts = 16, split = 8, layers = 4;
constexpr int block_size = 16, blocks_each = 3, decode_steps = 12;
constexpr int max_tokens = 256;
constexpr auto patience = 120s;     // for the peer's answers (it loads a model)
constexpr auto join_timeout = 30s;  // NCCL's first communicator in a process takes seconds
constexpr auto wait_timeout = 3s;
constexpr auto margin = 5s;

// A small qwen3_moe with a dense layer: 16 experts, top-4, so up to 127 tokens a step stay
// below fused_moe's cuBLAS path (which expert parallelism does not take).
const char* config_json = R"({
  "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "vocab_size": 512,
  "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 4, "mlp_only_layers": [1],
  "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "num_experts": 16,
  "num_experts_per_tok": 4, "moe_intermediate_size": 128, "norm_topk_prob": true,
  "decoder_sparse_step": 1, "max_position_embeddings": 1024, "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0, "tie_word_embeddings": false, "attention_bias": false,
  "eos_token_id": 511, "bos_token_id": 510
})";

long long in_ms(steady_clock::duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

void require_two_gpus() {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  BOOST_REQUIRE_MESSAGE(e == cudaSuccess && devices >= 2, "test_nccl_experts needs a machine with 2 GPUs; this one has "
                                                              << devices << " (" << cudaGetErrorString(e) << ")");
}

std::string peer_path() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "nccl_expert_peer").string();
}

// The control plane to the peer process: joins and steps as command lines; a peer process
// put in its place is a new generation.
class peer_control final : public expert_peers {
 public:
  uint64_t generation() const override { return generation_; }
  std::string missing() const override { return peer_ && peer_->running() ? "" : "the peer process"; }
  void invite(const expert_session& s) override {
    command("join " + std::to_string(s.stage) + " " + std::to_string(s.session) + " " + test::to_hex(s.id) + " " +
            std::to_string(s.rank) + " " + std::to_string(s.ranks));
  }
  void announce(const expert_step& s) override {
    command("step " + std::to_string(s.stage) + " " + std::to_string(s.session) + " " + std::to_string(s.tokens) + " " +
            std::to_string(s.first_layer) + " " + std::to_string(s.last_layer));
    if (kill_at_next_step_) {
      kill_at_next_step_ = false;
      peer_->kill();
    }
  }

  // A new peer process that has loaded the model.
  void replace(test::child_process* peer, const std::string& model) {
    peer_ = peer;
    ++generation_;
    unanswered_ = 0;
    BOOST_REQUIRE_MESSAGE(peer_->started(), "cannot start " << peer_path());
    command("load " + model + " " + std::to_string(split) + " " + std::to_string(experts) + " " +
            std::to_string(max_tokens));
    BOOST_REQUIRE_MESSAGE(failures().empty(), "the peer: " << failures());
  }
  void kill_at_next_step() { kill_at_next_step_ = true; }

  // The peer's failures among its answers to every command so far: "" when all were ok.
  std::string failures() {
    std::string failed;
    for (; unanswered_ > 0; --unanswered_) {
      auto line = peer_->read_line(patience);
      if (!line) return failed + "no answer within " + std::to_string(patience.count()) + " s";
      if (*line != "ok") failed += *line + "; ";
    }
    return failed;
  }

 private:
  void command(const std::string& line) {
    ++unanswered_;
    peer_->write_line(line);
  }

  test::child_process* peer_ = nullptr;
  uint64_t generation_ = 1;
  int unanswered_ = 0;
  bool kill_at_next_step_ = false;
};

using test::check_identical;
using test::transcript;
using pipeline = std::vector<std::unique_ptr<step_runner>>;

// One step through the runners in order; an error from the first that fails.
result<std::vector<sampled_token>> run_step(pipeline& p, const forward_batch& batch,
                                            const std::vector<sample_request>& samples) {
  std::vector<float> hidden;
  for (size_t k = 0; k < p.size(); ++k) {
    const bool last = k + 1 == p.size();
    auto out = p[k]->run(batch, std::move(hidden), last ? samples : std::vector<sample_request>{});
    if (!out) return out.err();
    if (last) return std::move(out->tokens);
    hidden = std::move(out->hidden);
  }
  return error{"no stage"};
}

// Greedy decoding of `prompts` side by side: one prefill, then decode_steps steps of one
// token a sequence, each with the top-5 log-probs; an error at the first step that fails.
result<transcript> decode(pipeline& p, const std::vector<std::vector<int>>& prompts) {
  const size_t n = prompts.size();
  std::vector<std::vector<int>> tables(n);
  std::vector<token_history> histories(n);
  std::vector<sample_request> samples;
  sampling_params greedy;
  greedy.temperature = 0.0f;
  greedy.top_logprobs = 5;
  forward_batch prefill;
  for (size_t s = 0; s < n; ++s) {
    for (int b = 0; b < blocks_each; ++b) tables[s].push_back(int(s) * blocks_each + b);
    const int length = int(prompts[s].size());
    prefill.sequences.push_back({int(prefill.token_ids.size()), length, 0, tables[s], logits_rows::last});
    prefill.token_ids.insert(prefill.token_ids.end(), prompts[s].begin(), prompts[s].end());
    samples.push_back({greedy, &histories[s], length});
  }
  auto first = run_step(p, prefill, samples);
  if (!first) return first.err();
  transcript t{std::move(*first)};
  for (int step = 0; step < decode_steps; ++step) {
    forward_batch batch;
    for (size_t s = 0; s < n; ++s) {
      const int position = int(prompts[s].size()) + step;
      batch.token_ids.push_back(t.back()[s].token);
      batch.sequences.push_back({int(s), 1, position, tables[s], logits_rows::last});
      samples[s].position = position + 1;
    }
    auto next = run_step(p, batch, samples);
    if (!next) return next.err();
    t.push_back(std::move(*next));
  }
  return t;
}

std::vector<std::vector<int>> random_prompts(const std::vector<int>& lengths, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> token(0, 509);
  std::vector<std::vector<int>> prompts;
  for (int length : lengths) {
    prompts.emplace_back();
    for (int i = 0; i < length; ++i) prompts.back().push_back(token(gen));
  }
  return prompts;
}

// Three prompts of 80 tokens in all (a prefill of 320 pairs: 64-row tiles), then decode
// steps of 16 pairs (moe_gemv); twenty of 5 tokens (400 pairs), then decode steps padded
// to a bucket of 24 sequences, 96 pairs (16-row tiles).
const std::vector<std::vector<std::vector<int>>>& batches() {
  static const auto b = std::vector<std::vector<std::vector<int>>>{random_prompts({30, 27, 23}, 1),
                                                                   random_prompts(std::vector<int>(20, 5), 2)};
  return b;
}

struct two_gpus {
  test::temp_dir dir{"nccl_experts"};
  std::shared_ptr<const gpu_weights> weights;
  std::shared_ptr<gpu_experts> all, first_half;
  test::child_process peer{peer_path()};
  std::shared_ptr<peer_control> control = std::make_shared<peer_control>();
  std::vector<transcript> want;  // one GPU's, per batch

  two_gpus() {
    require_two_gpus();
    std::signal(SIGPIPE, SIG_IGN);  // a command to a killed peer fails as a write, not as this process
    std::ofstream(dir.path() / "config.json") << config_json;
    TROUPE_CUDA_CHECK(cudaSetDevice(0));
    auto w = load_gpu_weights(dir.path(), /*dummy=*/true);
    BOOST_REQUIRE_MESSAGE(w, (w ? std::string() : w.err().message));
    weights = *w;
    all = std::make_shared<gpu_experts>(weights);
    all->attach("all", 0, experts);
    first_half = std::make_shared<gpu_experts>(weights);
    first_half->attach("mine", 0, split);
    control->replace(&peer, dir.path().string());
    pipeline one;
    one.push_back(runner(0, layers, nullptr));
    for (const auto& prompts : batches()) {
      auto t = decode(one, prompts);
      BOOST_REQUIRE_MESSAGE(t, (t ? std::string() : t.err().message));
      want.push_back(std::move(*t));
    }
  }

  gpu_runner_options runner_options(int first, int last) const {
    gpu_runner_options o{64, block_size, 512, 32, max_tokens, true};
    o.first_layer = first;
    o.last_layer = last;
    return o;
  }

  // Layers [first, last) with every expert here (remote null) or through `remote`.
  std::unique_ptr<step_runner> runner(int first, int last, std::shared_ptr<gpu_remote_experts> remote) {
    auto r = gpu_step_runner::create(weights, remote ? first_half : all, runner_options(first, last), nullptr,
                                     std::move(remote));
    BOOST_REQUIRE_MESSAGE(r, (r ? std::string() : r.err().message));
    return std::move(*r);
  }

  std::shared_ptr<gpu_remote_experts> link(int stage) {
    const model_config& c = weights->config;
    nccl_experts::options o{
        stage,        0,           max_tokens, c.hidden_size, c.num_experts_per_tok, {0, split}, {{split, experts}},
        join_timeout, wait_timeout};
    auto e = nccl_experts::create(o, control);
    BOOST_REQUIRE_MESSAGE(e, (e ? std::string() : e.err().message));
    return std::move(*e);
  }

  // The model split into `stages` runners at layer 2, each reaching the peer.
  pipeline split_runners(int stages) {
    pipeline p;
    if (stages == 1) {
      p.push_back(runner(0, layers, link(0)));
    } else {
      p.push_back(runner(0, 2, link(0)));
      p.push_back(runner(2, layers, link(1)));
    }
    return p;
  }

  void expect_one_gpus_tokens(pipeline& p, const std::string& what) {
    for (size_t b = 0; b < batches().size(); ++b) {
      auto got = decode(p, batches()[b]);
      BOOST_REQUIRE_MESSAGE(got, what << ": " << (got ? std::string() : got.err().message));
      check_identical(*got, want[b], what + " batch " + std::to_string(b));
    }
    const std::string failed = control->failures();
    BOOST_TEST(failed.empty(), what << ": the peer: " << failed);
  }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(experts_split_over_two_gpus_answer_one_gpus_tokens, two_gpus) {
  pipeline one_stage = split_runners(1);
  expect_one_gpus_tokens(one_stage, "one stage, experts on two GPUs");
}

BOOST_FIXTURE_TEST_CASE(two_stages_each_with_its_communicator_answer_one_gpus_tokens, two_gpus) {
  pipeline two_stages = split_runners(2);
  expect_one_gpus_tokens(two_stages, "two stages, experts on two GPUs");
}

BOOST_FIXTURE_TEST_CASE(a_peer_killed_during_a_step_fails_it_in_time_and_a_new_peer_serves_again, two_gpus) {
  pipeline p = split_runners(1);
  expect_one_gpus_tokens(p, "before the kill");
  control->kill_at_next_step();
  const auto start = steady_clock::now();
  auto failed = decode(p, batches()[0]);
  const auto took = steady_clock::now() - start;
  BOOST_TEST(!failed, "a step succeeded with its peer killed");
  BOOST_TEST((took < wait_timeout + margin), "the failed step took " << in_ms(took) << " ms");
  BOOST_TEST_MESSAGE("the step failed after " << in_ms(took) << " ms: " << (failed ? "" : failed.err().message));
  BOOST_REQUIRE(peer.wait(patience).has_value());

  test::child_process again{peer_path()};
  control->replace(&again, dir.path().string());
  expect_one_gpus_tokens(p, "with a new peer");
}
