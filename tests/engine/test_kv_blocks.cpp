// kv_manager's bookkeeping on its own: block grants, prefix-cache hits that share blocks,
// eviction of unreferenced cached blocks (least recently freed first), and refusals.
#define BOOST_TEST_MODULE kv_blocks
#include <boost/test/unit_test.hpp>

#include <numeric>
#include <set>

#include "engine/kv_blocks.hpp"

using namespace troupe;

namespace {

std::vector<int> tokens(int first, int count) {
  std::vector<int> t(static_cast<size_t>(count));
  std::iota(t.begin(), t.end(), first);
  return t;
}

kv_admission admit(kv_blocks& kv, request_id id, const std::vector<int>& prompt) {
  kv_step_request r;
  r.admits.push_back({id, prompt});
  auto reply = kv.apply(r);
  BOOST_REQUIRE(reply.admissions.size() == 1u);
  return reply.admissions[0];
}

void commit_and_release(kv_blocks& kv, request_id id, const std::vector<int>& all) {
  kv_step_request r;
  r.commits.push_back({id, all});
  kv.apply(r);
  kv_step_request done;
  done.releases.push_back(id);
  kv.apply(done);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_repeated_prefix_reuses_full_blocks_and_recomputes_the_last_token) {
  kv_blocks kv(16, 4);
  const auto prompt = tokens(100, 10);  // two full blocks and a partial one
  kv_admission first = admit(kv, 1, prompt);
  BOOST_TEST(first.admitted);
  BOOST_TEST(first.cached_tokens == 0);
  BOOST_TEST(first.blocks.size() == 3u);
  commit_and_release(kv, 1, prompt);
  BOOST_TEST(kv.usage().used_blocks == 0);
  BOOST_TEST(kv.usage().cached_blocks == 2);  // the partial block is not cached

  kv_admission second = admit(kv, 2, prompt);
  BOOST_TEST(second.cached_tokens == 8);
  BOOST_TEST((std::vector<int>(second.blocks.begin(), second.blocks.begin() + 2) ==
              std::vector<int>(first.blocks.begin(), first.blocks.begin() + 2)));

  // Exactly one full block of prompt: at least one token must be computed, so no hit.
  kv_blocks exact(16, 4);
  const auto four = tokens(7, 4);
  admit(exact, 1, four);
  commit_and_release(exact, 1, four);
  BOOST_TEST(admit(exact, 2, four).cached_tokens == 0);
}

BOOST_AUTO_TEST_CASE(a_different_earlier_block_means_no_hit_later) {
  kv_blocks kv(16, 4);
  auto a = tokens(0, 9);
  admit(kv, 1, a);
  commit_and_release(kv, 1, a);
  auto b = a;
  b[1] = 999;  // first block differs; the second block's tokens are the same as a's
  BOOST_TEST(admit(kv, 2, b).cached_tokens == 0);
}

BOOST_AUTO_TEST_CASE(two_live_sequences_share_cached_blocks_and_free_them_once) {
  kv_blocks kv(8, 4);
  const auto prompt = tokens(50, 9);
  admit(kv, 1, prompt);
  commit_and_release(kv, 1, prompt);
  kv_admission b = admit(kv, 2, prompt), c = admit(kv, 3, prompt);
  BOOST_TEST(b.blocks[0] == c.blocks[0]);
  BOOST_TEST(kv.usage().used_blocks == 4);  // 2 shared + 1 private each
  kv_step_request done;
  done.releases = {2, 3};
  kv.apply(done);
  BOOST_TEST(kv.usage().used_blocks == 0);
  BOOST_TEST(kv.usage().cached_blocks == 2);
}

BOOST_AUTO_TEST_CASE(cached_blocks_are_evicted_least_recently_freed_first) {
  kv_blocks kv(4, 2);
  const auto a = tokens(10, 5), b = tokens(20, 5);  // two full blocks + one partial each
  admit(kv, 1, a);
  commit_and_release(kv, 1, a);  // a's two blocks cached first
  admit(kv, 2, b);               // needs 3 blocks: 2 free, then evicts a's older block
  commit_and_release(kv, 2, b);
  BOOST_TEST(kv.usage().cached_blocks == 3);
  BOOST_TEST(admit(kv, 3, a).cached_tokens == 0);  // a's first block is gone, so no chain hit
}

BOOST_AUTO_TEST_CASE(grows_and_admissions_that_do_not_fit_are_refused) {
  kv_blocks kv(4, 4);
  BOOST_TEST(admit(kv, 1, tokens(0, 12)).admitted);  // 3 of 4 blocks
  kv_step_request r;
  r.grows.push_back({1, 16});  // a fourth block: fits
  r.grows.push_back({1, 20});  // a fifth: refused
  r.admits.push_back({2, tokens(100, 3)});
  auto reply = kv.apply(r);
  BOOST_TEST(reply.grown[0].size() == 4u);
  BOOST_TEST(reply.grown[1].empty());
  BOOST_TEST(!reply.admissions[0].admitted);
  kv.reset();
  BOOST_TEST(kv.usage().used_blocks == 0);
  BOOST_TEST(admit(kv, 2, tokens(100, 16)).admitted);
}

// A model with linear-attention layers: every admitted sequence holds its own state slot
// until released or reset, an admission without a free slot is refused, and no prefix is
// ever served from the cache (the linear layers' state at its end is not kept).
BOOST_AUTO_TEST_CASE(recurrent_state_slots_are_held_per_sequence_and_turn_the_prefix_cache_off) {
  kv_blocks kv(16, 4, 2);
  const auto prompt = tokens(100, 10);
  kv_admission a = admit(kv, 1, prompt), b = admit(kv, 2, tokens(200, 3));
  BOOST_TEST(a.admitted);
  BOOST_TEST(b.admitted);
  BOOST_TEST((std::set<int>{a.state_slot, b.state_slot} == std::set<int>{0, 1}));
  BOOST_TEST(!admit(kv, 3, tokens(300, 2)).admitted);  // blocks are free, slots are not

  commit_and_release(kv, 1, prompt);
  BOOST_TEST(kv.usage().cached_blocks == 0);
  kv_admission again = admit(kv, 4, prompt);  // the same prompt: computed from scratch
  BOOST_TEST(again.admitted);
  BOOST_TEST(again.cached_tokens == 0);
  BOOST_TEST(again.state_slot == a.state_slot);  // the slot sequence 1 gave back
  BOOST_TEST(kv.usage().prefix_hits == 0u);

  kv.reset();
  BOOST_TEST(admit(kv, 5, prompt).state_slot >= 0);
  BOOST_TEST(admit(kv, 6, prompt).state_slot >= 0);

  // Without linear layers no slot is handed out.
  kv_blocks plain(16, 4);
  BOOST_TEST(admit(plain, 1, prompt).state_slot == -1);
}
