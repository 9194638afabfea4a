// The Responses API's store: bounded in count and in bytes, the oldest evicted first, each
// entry gone after its time to live; what is evicted or expired is simply not found.
#define BOOST_TEST_MODULE response_store
#include <boost/test/unit_test.hpp>

#include <string>

#include "gateway/openai/response_store.hpp"

using namespace troupe;
using namespace std::chrono_literals;

namespace {

response_store::entry entry_of(size_t bytes) {
  return {std::string(bytes, 'x'), nlohmann::ordered_json::array({{{"role", "user"}, {"content", "hi"}}})};
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_oldest_go_first_past_the_count) {
  response_store store({3, size_t(1) << 20, 3600s});
  for (int i = 0; i < 5; ++i) store.put("resp_" + std::to_string(i), entry_of(10));
  BOOST_TEST(store.size() == 3);
  BOOST_TEST(!store.get("resp_0"));
  BOOST_TEST(!store.get("resp_1"));
  BOOST_TEST(store.get("resp_4")->response == std::string(10, 'x'));
  BOOST_TEST(store.get("resp_4")->conversation[0]["content"] == "hi");
}

BOOST_AUTO_TEST_CASE(bytes_are_bounded_and_a_huge_entry_is_not_kept) {
  response_store store({100, 3000, 3600s});
  for (int i = 0; i < 10; ++i) store.put("resp_" + std::to_string(i), entry_of(900));
  BOOST_TEST(store.bytes() <= 3000);
  BOOST_TEST(store.size() == 3);
  BOOST_TEST(bool(store.get("resp_9")));
  store.put("resp_big", entry_of(5000));
  BOOST_TEST(!store.get("resp_big"));
  BOOST_TEST(bool(store.get("resp_9")), "a refused entry evicts nothing");
}

BOOST_AUTO_TEST_CASE(entries_expire_and_erase_removes_them) {
  response_store store({100, size_t(1) << 20, 60s});
  const auto t0 = response_store::clock::now();
  store.put("resp_a", entry_of(1), t0);
  store.put("resp_b", entry_of(1), t0 + 30s);
  BOOST_TEST(bool(store.get("resp_a", t0 + 59s)));
  BOOST_TEST(!store.get("resp_a", t0 + 61s));
  BOOST_TEST(bool(store.get("resp_b", t0 + 61s)));
  BOOST_TEST(store.erase("resp_b"));
  BOOST_TEST(!store.erase("resp_b"));
  BOOST_TEST(store.size() == 0);
  BOOST_TEST(store.bytes() == 0);
}
