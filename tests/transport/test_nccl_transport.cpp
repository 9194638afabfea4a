// The NCCL transport between two processes of one GPU each: this one is rank 0 on device
// 0, nccl_peer (a process it starts) rank 1 on device 1, and both check byte for byte what
// they receive (nccl_exchange.hpp). Then the failures: a peer that dies or quits while this
// rank waits for its bytes, and a rank that never joins, must each end in an error within
// the timeout, never a hang. It needs a machine with two GPUs and fails on any other.
#define BOOST_TEST_MODULE nccl_transport
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <functional>
#include <sstream>

#include "tests/support/error_text.hpp"
#include "tests/support/eventually.hpp"
#include "tests/transport/child_process.hpp"
#include "tests/transport/echo_peer_protocol.hpp"
#include "tests/transport/nccl_exchange.hpp"

using namespace troupe;
using namespace std::chrono_literals;
using std::chrono::steady_clock;

namespace {

// For what goes right: joining (NCCL's first communicator in a process takes seconds) and
// each exchange.
constexpr auto patience = 60s;
// For what goes wrong, and what an abort may add to it on a loaded machine.
constexpr auto timeout = 3s;
constexpr auto margin = 5s;

long long in_ms(steady_clock::duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

void require_two_gpus() {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  BOOST_REQUIRE_MESSAGE(e == cudaSuccess && devices >= 2,
                        "test_nccl_transport needs a machine with 2 GPUs; this one has "
                            << devices << " (" << cudaGetErrorString(e) << ")");
}

// nccl_peer sits next to this test, in the build and in a bundle for the GPU machine alike.
std::string peer_path() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "nccl_peer").string();
}

// This process as rank 0, joined with a new nccl_peer process as rank 1, and a stream.
struct joined_ranks {
  test::child_process peer{peer_path()};
  std::unique_ptr<nccl_transport> self;
  cudaStream_t stream = nullptr;

  joined_ranks() {
    require_two_gpus();
    BOOST_REQUIRE_MESSAGE(peer.started(), "cannot start " << peer_path());
    auto id = nccl_transport::new_id();
    BOOST_REQUIRE_MESSAGE(id, test::error_text(id));
    const auto patience_ms = std::chrono::milliseconds(patience).count();
    BOOST_REQUIRE(peer.write_line("join " + test::to_hex(*id) + " " + std::to_string(patience_ms)));
    auto t = nccl_transport::create(*id, 0, 2, 0, patience);
    BOOST_REQUIRE_MESSAGE(t, test::error_text(t));
    self = std::move(t).value();
    const std::string joined = peer_failure();
    BOOST_REQUIRE_MESSAGE(joined.empty(), "rank 1: " << joined);
    TROUPE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }
  ~joined_ranks() {
    if (stream) cudaStreamDestroy(stream);
  }

  // The peer's answer to the command written last: "" for ok.
  std::string peer_failure() {
    auto line = peer.read_line(patience);
    if (!line) return "nccl_peer gave no answer within " + std::to_string(patience.count()) + " s";
    return *line == "ok" ? "" : *line;
  }

  // `command` at both ranks: nccl_peer runs it, this process runs `mine`.
  void both(const std::string& command, const std::function<std::string()>& mine) {
    BOOST_REQUIRE(peer.write_line(command));
    const std::string failure = mine();
    BOOST_TEST(failure.empty(), "rank 0, " << command << ": " << failure);
    const std::string theirs = peer_failure();
    BOOST_TEST(theirs.empty(), "rank 1, " << command << ": " << theirs);
  }

  void transfer(uint32_t seed, const std::vector<size_t>& sizes) {
    std::ostringstream command;
    command << "transfer " << seed;
    for (size_t size : sizes) command << ' ' << size;
    both(command.str(), [&] { return test::transfer(*self, seed, sizes, stream, patience); });
  }

  void all_to_all(uint32_t seed, const test::two_rank_counts& c) {
    std::ostringstream command;
    command << "all_to_all " << seed;
    for (const auto& row : c) command << ' ' << row[0] << ' ' << row[1];
    both(command.str(), [&] { return test::all_to_all(*self, seed, c, stream, patience); });
  }

  // A receive on the stream, then `end_peer` ends the peer without its send: wait() fails
  // within its timeout, the aborted receive leaves the stream, and every call after fails
  // at once.
  void receive_from_a_peer_that_ends(const std::function<void()>& end_peer) {
    transfer(3, {4096});  // connected both ways: the receive below goes on the stream at once
    constexpr size_t size = size_t{1} << 20;
    test::device_bytes incoming(std::vector<uint8_t>(size, test::unwritten));
    const status received = self->receive(test::nccl_peer_rank, incoming.get(), size, stream);
    BOOST_REQUIRE_MESSAGE(received, test::error_text(received));
    end_peer();
    BOOST_REQUIRE_MESSAGE(peer.wait(patience).has_value(), "nccl_peer did not end");

    const auto start = steady_clock::now();
    const status waited = self->wait(stream, timeout);
    const auto took = steady_clock::now() - start;
    BOOST_TEST(!waited, "wait() succeeded on a receive nobody sent");
    BOOST_TEST((took < timeout + margin), "wait() took " << in_ms(took) << " ms");
    BOOST_TEST_MESSAGE("wait() failed after " << in_ms(took) << " ms: " << test::error_text(waited));
    BOOST_TEST(test::eventually([&] { return cudaStreamQuery(stream) == cudaSuccess; }, margin),
               "the aborted receive still holds the stream");

    const auto later = steady_clock::now();
    const status sent = self->send(test::nccl_peer_rank, incoming.get(), 16, stream);
    const status received_again = self->receive(test::nccl_peer_rank, incoming.get(), 16, stream);
    const status exchanged = self->all_to_all_v(incoming.get(), {8, 8}, incoming.get() + 16, {8, 8}, stream);
    const status waited_again = self->wait(stream, timeout);
    BOOST_TEST(!sent);
    BOOST_TEST(!received_again);
    BOOST_TEST(!exchanged);
    BOOST_TEST(!waited_again);
    BOOST_TEST((steady_clock::now() - later < 1s),
               "the calls after the abort took " << in_ms(steady_clock::now() - later) << " ms");
    BOOST_TEST_MESSAGE("then: " << test::error_text(sent));
  }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(send_and_receive_carry_every_size_both_ways, joined_ranks) {
  transfer(1, {0, 1, 3, 4096, 65537, (size_t{8} << 20) + 5});
}

BOOST_FIXTURE_TEST_CASE(steps_in_a_row_on_one_stream_arrive_in_order, joined_ranks) {
  transfer(2, std::vector<size_t>(16, size_t{256} << 10));
}

// Uneven counts, a rank that sends its peer nothing, one that keeps nothing, and nothing at all.
BOOST_FIXTURE_TEST_CASE(all_to_all_v_carries_uneven_counts, joined_ranks) {
  uint32_t seed = 10;
  for (const test::two_rank_counts& c :
       {test::two_rank_counts{{{3, 0}, {70001, 5}}}, test::two_rank_counts{{{0, size_t{1} << 20}, {17, 0}}},
        test::two_rank_counts{{{4096, 65537}, {1, (size_t{8} << 20) + 3}}}, test::two_rank_counts{{{0, 0}, {0, 0}}}})
    all_to_all(seed++, c);
}

BOOST_AUTO_TEST_CASE(joining_fails_within_the_timeout_when_a_rank_never_joins) {
  require_two_gpus();
  auto id = nccl_transport::new_id();
  BOOST_REQUIRE_MESSAGE(id, test::error_text(id));
  const auto start = steady_clock::now();
  auto t = nccl_transport::create(*id, 0, 2, 0, timeout);
  const auto took = steady_clock::now() - start;
  BOOST_REQUIRE_MESSAGE(!t, "rank 0 joined a communicator of 2 ranks alone");
  BOOST_TEST((took < timeout + margin), "joining took " << in_ms(took) << " ms");
  BOOST_TEST_MESSAGE("joining failed after " << in_ms(took) << " ms: " << test::error_text(t));
}

BOOST_FIXTURE_TEST_CASE(a_peer_that_quits_while_this_rank_receives_fails_the_wait_in_time, joined_ranks) {
  receive_from_a_peer_that_ends([&] { BOOST_REQUIRE(peer.write_line("quit")); });
}

BOOST_FIXTURE_TEST_CASE(a_peer_killed_while_this_rank_receives_fails_the_wait_in_time, joined_ranks) {
  receive_from_a_peer_that_ends([&] { peer.kill(); });
}
