#pragma once
// tokenizer.json's byte-level "BPE" model: the vocabulary and the ranked merges, applied
// to one pre-token at a time as Hugging Face tokenizers does (lowest-ranked pair first,
// leftmost among equals), in O(n log n) for a pre-token of n bytes.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"

namespace troupe {

// Hashing for maps keyed by std::string that are looked up by std::string_view.
struct string_hash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using string_map = std::unordered_map<std::string, int, string_hash, std::equal_to<>>;

class bpe {
 public:
  // `source` names the file in error messages.
  static result<bpe> from_json(const nlohmann::json& model, std::string_view source);

  // Appends the ids of one pre-token, given as raw bytes (not byte-level characters).
  void encode(std::string_view piece, std::vector<int>& ids) const;

  // The id of a vocabulary entry, by its text (in byte-level characters).
  std::optional<int> id_of(std::string_view token) const;

  // How many entries the vocabulary has.
  size_t size() const { return vocab_.size(); }

  // Vocabulary entries by id; empty strings where an id has none.
  const std::vector<std::string>& tokens() const { return tokens_; }

 private:
  struct merge {
    int rank;
    int merged_id;
  };
  static uint64_t pair_key(int left, int right) { return uint64_t(uint32_t(left)) << 32 | uint32_t(right); }

  string_map vocab_;                            // byte-level text -> id
  string_map vocab_by_bytes_;                   // raw bytes -> id, for ignore_merges
  std::vector<std::string> tokens_;             // id -> byte-level text
  std::array<int, 256> byte_ids_{};             // the one-character token of each byte
  std::unordered_map<uint64_t, merge> merges_;  // (left id, right id) -> merge
  bool ignore_merges_ = false;
};

}  // namespace troupe
