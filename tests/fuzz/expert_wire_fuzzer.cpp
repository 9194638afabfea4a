// libFuzzer: the MoE dispatch wire format between processes (tests/fuzz/README.md): bytes
// from a broken or hostile peer decode to a request whose arrays match its header, or to
// an error; a reply decodes into exactly the floats asked for, or to an error.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/check.hpp"
#include "transport/expert_wire.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace troupe;
  const std::vector<uint8_t> bytes(data, data + size);
  if (auto r = decode_request(bytes)) {
    const auto& h = r->header;
    TROUPE_CHECK(r->x.size() == size_t(h.tokens) * size_t(h.hidden), "x does not match the header");
    TROUPE_CHECK(r->chosen.size() == size_t(h.tokens) * size_t(h.k), "chosen does not match the header");
    TROUPE_CHECK(r->weights.size() == r->chosen.size(), "weights do not match the header");
  }
  std::vector<float> out(size % 64);
  (void)decode_reply(bytes, out.data(), out.size());
  return 0;
}
