// libFuzzer entry point for the request parser (built only with clang's -fsanitize=fuzzer):
//   build/tests/fuzz_http_request -dict=tests/gateway/fuzz_http_request.dict -max_total_time=60
#include "tests/gateway/http_request_fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  troupe::test::fuzz_http_request(data, size);
  return 0;
}
