#pragma once
// tokenizer.json's "normalizer": null, a Unicode normalization form (NFC, NFD, NFKC,
// NFKD, by utf8proc), or a Sequence of those.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"

namespace troupe {

class normalizer {
 public:
  // `source` names the file in error messages.
  static result<normalizer> from_json(const nlohmann::json& config, std::string_view source);

  // `text` (valid UTF-8) normalized: a view of `text` itself when normalizing leaves it
  // unchanged, else of `storage`.
  std::string_view apply(std::string_view text, std::string& storage) const;

 private:
  enum class form { nfc, nfd, nfkc, nfkd };

  static status add(const nlohmann::json& config, std::string_view source, std::vector<form>& forms);

  std::vector<form> forms_;
};

}  // namespace troupe
