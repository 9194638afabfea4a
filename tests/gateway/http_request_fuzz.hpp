#pragma once
// The request parser's fuzz body, shared by the libFuzzer harness
// (tests/fuzz/http_request_fuzzer.cpp, in the sanitizer build) and the bounded random-input
// test of every build. Any bytes, fed in any pieces, must end in requests that respect the
// limits or in a clean error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.hpp"
#include "gateway/http/request_parser.hpp"

namespace troupe::test {

inline constexpr size_t fuzz_max_header_bytes = 512;
inline constexpr size_t fuzz_max_body_bytes = 256;

inline void fuzz_http_request(const uint8_t* data, size_t size) {
  if (size == 0) return;
  // The first byte picks the piece size, so that how the bytes arrive is fuzzed too.
  size_t piece = data[0] == 0 ? size : data[0] % 17 + 1;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  http::request_parser parser(fuzz_max_header_bytes, fuzz_max_body_bytes);
  while (!rest.empty() && !parser.failed()) {
    std::string_view next = rest.substr(0, piece);
    size_t used = parser.feed(next);
    TROUPE_CHECK(used <= next.size(), "used more than it was given");
    rest.remove_prefix(used);
    parser.take_continue();
    if (parser.complete()) {
      http::parsed_request r = parser.take();
      size_t header_bytes = r.message.path.size() + r.message.query.size();
      for (const http::header& h : r.message.headers) header_bytes += h.name.size() + h.value.size();
      TROUPE_CHECK(!r.message.method.empty(), "a request without a method");
      TROUPE_CHECK(r.message.path.find('?') == std::string::npos, "a query left in the path");
      TROUPE_CHECK(header_bytes <= fuzz_max_header_bytes, "headers over the limit");
      TROUPE_CHECK(r.message.body.size() <= fuzz_max_body_bytes, "body over the limit");
      TROUPE_CHECK(!r.http_1_0 || !r.keep_alive, "HTTP/1.0 kept alive");
    } else {
      TROUPE_CHECK(parser.failed() || used == next.size(), "stopped early without a reason");
    }
  }
  if (parser.failed()) {
    int s = parser.error_status();
    TROUPE_CHECK(s == 400 || s == 413 || s == 431 || s == 505, "an unexpected error status");
    TROUPE_CHECK(!parser.error_message().empty(), "an error without a message");
  }
}

}  // namespace troupe::test
