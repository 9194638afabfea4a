#pragma once
// A small byte-level BPE tokenizer.json for tests: ids 0-255 are the bytes, then the
// merges h+e, l+l, he+ll, hell+o and Ġ+w (256-260); the caller adds the rest.
#include <string>

#include <nlohmann/json.hpp>

#include "base/utf8.hpp"
#include "text/tokenizer/byte_level.hpp"

namespace troupe::test {

inline nlohmann::json tiny_tokenizer_json() {
  using json = nlohmann::json;
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) {
    std::string token;
    append_utf8(byte_level_char(uint8_t(b)), token);
    vocab[token] = b;
  }
  const char* merged[] = {"he", "ll", "hell", "hello", "Ġw"};
  for (int i = 0; i < 5; ++i) vocab[merged[i]] = 256 + i;
  return {
      {"version", "1.0"},
      {"added_tokens", json::array()},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
      {"model",
       {{"type", "BPE"},
        {"vocab", vocab},
        {"merges", {"h e", "l l", "he ll", "hell o", "Ġ w"}},
        {"ignore_merges", false}}},
  };
}

}  // namespace troupe::test
