// What the two ends of expert parallelism across GPUs agree on: the control messages, as
// they travel (msgpack, from the same field lists CAF serializes), and the bytes of one
// MoE layer's transfers.
#define BOOST_TEST_MODULE expert_parallel_wire
#include <boost/test/unit_test.hpp>

#include "transport/expert_parallel.hpp"

using namespace troupe;

namespace {

template <class T>
T round_trip(const T& value) {
  msgpack::sbuffer buffer;
  msgpack::pack(buffer, value);
  return msgpack::unpack(buffer.data(), buffer.size())->as<T>();
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_session_and_a_step_arrive_as_sent) {
  const expert_session s{3, 0xfedcba9876543210ull, {0, 1, 254, 255, 7}, 2, 4};
  const expert_session back = round_trip(s);
  BOOST_TEST(back.stage == 3);
  BOOST_TEST(back.session == 0xfedcba9876543210ull);
  BOOST_TEST((back.id == std::vector<uint8_t>{0, 1, 254, 255, 7}));
  BOOST_TEST(back.rank == 2);
  BOOST_TEST(back.ranks == 4);
  const expert_step step{1, 42, 8192, 24, 48};
  const expert_step step_back = round_trip(step);
  BOOST_TEST(step_back.stage == 1);
  BOOST_TEST(step_back.session == 42u);
  BOOST_TEST(step_back.tokens == 8192);
  BOOST_TEST(step_back.first_layer == 24);
  BOOST_TEST(step_back.last_layer == 48);
}

BOOST_AUTO_TEST_CASE(a_layers_transfers_are_the_tokens_out_and_every_pairs_fp32_row_back) {
  // Qwen3-30B-A3B at a decode batch of 128: 512 KiB of rows and 8 KiB of routing out, 8 MiB back.
  const expert_layer_bytes b = expert_layer_transfers(128, 2048, 8);
  BOOST_TEST(b.rows == size_t(128) * 2048 * 2);
  BOOST_TEST(b.chosen == size_t(128) * 8 * 4);
  BOOST_TEST(b.weights == size_t(128) * 8 * 4);
  BOOST_TEST(b.pair_rows == size_t(128) * 8 * 2048 * 4);
  const expert_layer_bytes none = expert_layer_transfers(0, 2048, 8);
  BOOST_TEST(none.rows + none.chosen + none.weights + none.pair_rows == 0u);
}
