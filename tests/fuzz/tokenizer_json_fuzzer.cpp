// libFuzzer: tokenizer.json as a checkpoint ships it (tests/fuzz/README.md): a file loads
// or is refused with a message naming what is wrong; a loaded one encodes a sentence.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.hpp"
#include "text/tokenizer/tokenizer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace troupe;
  auto t = tokenizer::parse(std::string_view(reinterpret_cast<const char*>(data), size), "tokenizer.json");
  if (!t) {
    TROUPE_CHECK(!t.err().message.empty(), "a refused tokenizer.json without a message");
    return 0;
  }
  (void)t->encode("Hello, world! 123 <|im_start|> ünïcödé");
  return 0;
}
