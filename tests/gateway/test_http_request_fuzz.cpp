// The fuzz body of tests/fuzz/http_request_fuzzer.cpp on seeded random inputs, bounded in time, so that
// CI exercises it with g++ too: random bytes, and valid requests with random damage.
#define BOOST_TEST_MODULE http_request_fuzz
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "tests/gateway/http_request_fuzz.hpp"

namespace {

const std::vector<std::string> seeds = {
    "GET /v1/models HTTP/1.1\r\nHost: a\r\n\r\n",
    "POST /v1/chat/completions?x=1 HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello",
    "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nTrailer: t\r\n\r\n",
    "GET http://h/p#f HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.1\r\n\r\n",
    "GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nrest",
};

std::string damaged(std::mt19937& gen) {
  std::string s = seeds[gen() % seeds.size()];
  if (gen() % 2) s += seeds[gen() % seeds.size()];  // pipelined
  int edits = int(gen() % 8);
  for (int i = 0; i < edits && !s.empty(); ++i) {
    size_t at = gen() % s.size();
    switch (gen() % 4) {
      case 0:
        s[at] = char(gen());
        break;
      case 1:
        s.insert(at, 1, "\r\n :0aZ\x7f"[gen() % 8]);
        break;
      case 2:
        s.erase(at, 1 + gen() % 4);
        break;
      case 3:
        s.insert(at, std::string(gen() % 600, char(gen())));
        break;
    }
  }
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(random_and_damaged_requests_end_in_requests_or_clean_errors) {
  std::mt19937 gen(20240611);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  int runs = 0;
  for (; runs < 1000000 && std::chrono::steady_clock::now() < deadline; ++runs) {
    std::string input(1, char(gen()));
    if (gen() % 4 == 0) {
      input.resize(1 + gen() % 200);
      for (size_t i = 1; i < input.size(); ++i) input[i] = char(gen());
    } else {
      input += damaged(gen);
    }
    troupe::test::fuzz_http_request(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  }
  BOOST_TEST(runs > 1000);
}
