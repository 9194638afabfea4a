// A process's share of a model's weights on the GPU (a cluster node's: its stages' layers,
// or its expert group's experts of every layer) computes what every weight does, to the
// bit, on the golden fixtures' checkpoints and on dummy weights of their configs (each
// dummy weight is the same whichever share holds it). Pipeline stages each load their
// own layers; expert parallelism is played on one GPU, the stage's peer being another
// share's experts that the stage's transfers reach in place (what nccl_expert_server
// computes on another GPU). A share is smaller than the whole, and what it lacks is
// refused with an error, never read.
#define BOOST_TEST_MODULE gpu_weight_share
#include <boost/test/unit_test.hpp>

#include "model/cuda/gpu_remote_experts.hpp"
#include "model/cuda/gpu_step_runner.hpp"
#include "tests/model/gpu_fixtures.hpp"
#include "tests/model/pipeline_decode.hpp"

using namespace troupe;
namespace fs = std::filesystem;

namespace {

constexpr int max_tokens = 256;

gpu_runner_options runner_options(int first, int last, bool graphs) {
  gpu_runner_options o{64, test::block_size, 512, 8, max_tokens, graphs};
  o.first_layer = first;
  o.last_layer = last;
  return o;
}

weight_share stage_share(int first, int last) {
  weight_share s;
  s.everything = false;
  s.stage_layers = {{first, last}};
  return s;
}

std::unique_ptr<step_runner> runner(const test::engine_parts& e, int first, int last, bool graphs,
                                    std::shared_ptr<gpu_remote_experts> remote = nullptr) {
  auto r =
      gpu_step_runner::create(e.weights, e.experts, runner_options(first, last, graphs), nullptr, std::move(remote));
  BOOST_REQUIRE_MESSAGE(r, (r ? std::string() : r.err().message));
  return std::move(*r);
}

std::vector<std::vector<int>> prompts_of(const fs::path& dir) {
  return {test::read_golden(dir)["prompt"].get<std::vector<int>>()};
}

// Expert parallelism in one process: the stage computes its own experts, and every layer it
// sends reaches `peer`'s experts [first, last) at once, on the stage's stream.
class same_gpu_peer final : public gpu_remote_experts {
 public:
  same_gpu_peer(const model_config& c, std::pair<int, int> local, test::engine_parts peer, std::pair<int, int> served)
      : c_(c), local_(local), peer_(std::move(peer)), served_(served) {
    const size_t rows = size_t(max_tokens) * size_t(c.num_experts_per_tok) * size_t(c.hidden_size);
    const size_t workspace = peer_.experts->workspace_bytes(max_tokens);
    auto memory = device_arena::allocate(2 * rows * sizeof(float) + workspace + 1024, "a peer");  // and alignment
    BOOST_REQUIRE(memory);
    memory_ = std::move(*memory);
    local_rows_ = memory_.take<float>(rows);
    peer_rows_ = memory_.take<float>(rows);
    workspace_ = memory_.take<char>(workspace);
  }

  std::pair<int, int> local_experts() const override { return local_; }
  float* local_rows() override { return local_rows_; }
  status start(int, int first_layer, int) override {
    layer_ = first_layer;
    return ok();
  }
  status send(__nv_bfloat16* x, int* chosen, float* weights, int tokens, cudaStream_t stream) override {
    while (!c_.is_moe_layer(layer_)) ++layer_;
    return peer_.experts->run_rows(layer_++, x, tokens, chosen, weights, served_.first, served_.second, workspace_,
                                   peer_rows_, stream);
  }
  result<std::vector<cuda::moe_rows_part>> receive(int, cudaStream_t) override {
    return std::vector<cuda::moe_rows_part>{{local_.first, local_.second, local_rows_},
                                            {served_.first, served_.second, peer_rows_}};
  }
  status finish(cudaStream_t stream) override {
    return cudaStreamSynchronize(stream) == cudaSuccess ? ok() : status(error{"the stream failed"});
  }
  void abandon(cudaStream_t stream) override { cudaStreamSynchronize(stream); }

 private:
  model_config c_;
  std::pair<int, int> local_;
  test::engine_parts peer_;
  std::pair<int, int> served_;
  device_arena memory_ = device_arena::measure();
  float *local_rows_ = nullptr, *peer_rows_ = nullptr;
  void* workspace_ = nullptr;
  int layer_ = 0;
};

// One stage of every layer whose experts [0, split) are in its process and [split, E) in
// its peer's, the weights of each either all of them or its share.
test::transcript decode_across_two_shares(const fs::path& dir, bool dummy, bool shared, int split) {
  const int layers = load_model_config(dir)->num_layers;
  weight_share stage = stage_share(0, layers), peer;
  stage.group_experts = {0, split};
  peer.everything = false;
  const test::engine_parts stage_parts = test::load_engine(dir, dummy, shared ? stage : weight_share{});
  const int experts = stage_parts.weights->config.num_experts;
  peer.group_experts = {split, experts};
  auto link = std::make_shared<same_gpu_peer>(stage_parts.weights->config, std::pair{0, split},
                                              test::load_engine(dir, dummy, shared ? peer : weight_share{}),
                                              std::pair{split, experts});
  test::pipeline p{{}, size_t(stage_parts.weights->config.hidden_size)};
  p.stages.push_back(runner(stage_parts, 0, layers, false, link));
  return test::decode(p, prompts_of(dir));
}

}  // namespace

BOOST_AUTO_TEST_CASE(stages_of_their_own_layers_decode_like_stages_of_every_weight) {
  for (const auto& dir : test::gpu_fixtures())
    for (const bool dummy : {false, true}) {
      BOOST_TEST_CONTEXT(dir.filename().string() << (dummy ? " (dummy weights)" : "")) {
        const test::engine_parts whole = test::load_engine(dir, dummy);
        const int layers = whole.weights->config.num_layers, mid = (layers + 1) / 2;
        const test::engine_parts first = test::load_engine(dir, dummy, stage_share(0, mid));
        const test::engine_parts second = test::load_engine(dir, dummy, stage_share(mid, layers));
        BOOST_TEST(first.weights->memory.used() < whole.weights->memory.used());
        BOOST_TEST(second.weights->memory.used() < whole.weights->memory.used());
        test::pipeline all{{}, size_t(whole.weights->config.hidden_size)}, shared{{}, all.hidden_size};
        all.stages.push_back(runner(whole, 0, mid, true));
        all.stages.push_back(runner(whole, mid, layers, true));
        shared.stages.push_back(runner(first, 0, mid, true));
        shared.stages.push_back(runner(second, mid, layers, true));
        const auto prompts = prompts_of(dir);
        test::check_identical(test::decode(shared, prompts), test::decode(all, prompts), "stages of their own layers");
      }
    }
}

// Qwen3.5's shared expert leaves its slot in a share of some experts (it runs by its own
// matmuls there, as beside experts spread over GPUs).
BOOST_AUTO_TEST_CASE(expert_groups_of_their_own_experts_answer_like_groups_of_every_weight) {
  for (const auto& dir : test::gpu_fixtures())
    for (const bool dummy : {false, true}) {
      BOOST_TEST_CONTEXT(dir.filename().string() << (dummy ? " (dummy weights)" : "")) {
        const int split = load_model_config(dir)->num_experts / 2 + 1;
        test::check_identical(decode_across_two_shares(dir, dummy, true, split),
                              decode_across_two_shares(dir, dummy, false, split), "experts of their own");
      }
    }
}

BOOST_AUTO_TEST_CASE(what_a_share_lacks_is_refused) {
  const fs::path dir = test::gpu_fixtures().front();
  const test::engine_parts whole = test::load_engine(dir, true);
  const int layers = whole.weights->config.num_layers, experts = whole.weights->config.num_experts;
  const test::engine_parts first = test::load_engine(dir, true, stage_share(0, 1));
  auto other = gpu_step_runner::create(first.weights, first.experts, runner_options(1, layers, false));
  BOOST_REQUIRE(!other);
  BOOST_TEST(other.err().message.find("its weights are not among this process's (layers 0-0)") != std::string::npos,
             other.err().message);

  weight_share some = stage_share(0, layers);
  some.group_experts = {0, experts / 2};
  const test::engine_parts half = test::load_engine(dir, true, some);
  BOOST_TEST(half.weights->memory.used() < whole.weights->memory.used());
  auto alone = gpu_step_runner::create(half.weights, half.experts, runner_options(0, layers, false));
  BOOST_REQUIRE(!alone);
  BOOST_TEST(alone.err().message.find("computes every expert of its layers, and this process holds layers 0-" +
                                      std::to_string(layers - 1) + " and experts 0-" + std::to_string(experts / 2 - 1) +
                                      " of every layer") != std::string::npos,
             alone.err().message);
  half.experts->attach("elsewhere", experts / 2, experts);  // a group the share lacks
  int moe_layer = 0;
  while (!whole.weights->config.is_moe_layer(moe_layer)) ++moe_layer;
  auto rows =
      half.experts->run_rows(moe_layer, nullptr, 1, nullptr, nullptr, experts / 2, experts, nullptr, nullptr, nullptr);
  BOOST_REQUIRE(!rows);
  BOOST_TEST(rows.err().message == "layer " + std::to_string(moe_layer) + "'s experts " + std::to_string(experts / 2) +
                                       ".." + std::to_string(experts - 1) +
                                       " are not among this process's weights (of its " + std::to_string(experts) +
                                       ", it holds 0.." + std::to_string(experts / 2 - 1) + ")",
             rows.err().message);
}
