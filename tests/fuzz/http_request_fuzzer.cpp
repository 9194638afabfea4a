// libFuzzer: the HTTP request parser, fed in pieces (tests/fuzz/README.md).
#include "tests/gateway/http_request_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  troupe::test::fuzz_http_request(data, size);
  return 0;
}
