// libFuzzer: config.json (tests/fuzz/README.md): any bytes give a model shape or an error
// naming the file and the field.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/check.hpp"
#include "model/model_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto c = troupe::parse_model_config(std::string_view(reinterpret_cast<const char*>(data), size), "config.json");
  if (!c) TROUPE_CHECK(c.err().message.find("config.json") != std::string::npos, "an error that names no file");
  return 0;
}
