// libFuzzer: a .safetensors file's header (tests/fuzz/README.md): any bytes open as a
// checkpoint whose tensors all lie inside the file, or are refused with a message.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "base/check.hpp"
#include "model/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace troupe;
  static const std::string path = "/tmp/troupe_safetensors_fuzzer_" + std::to_string(getpid()) + ".safetensors";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  auto c = checkpoint::open_file(path);
  if (!c) {
    TROUPE_CHECK(!c.err().message.empty(), "a refused file without a message");
    return 0;
  }
  for (const auto& [name, t] : c->tensors()) {
    size_t sum = 0;
    for (size_t i = 0; i < t.nbytes; ++i) sum += size_t(t.data[i]);  // every byte readable
    (void)sum;
  }
  return 0;
}
