#pragma once
// tokenizer.json's "pre_tokenizer" for byte-level BPE: Split steps (a regex, behavior
// "Isolated") and one ByteLevel step (an optional prefix space, an optional split by
// GPT-2's regex), alone or in a Sequence, applied in order to every piece so far.
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/result.hpp"
#include "text/tokenizer/regex.hpp"

namespace troupe {

class pre_tokenizer {
 public:
  // `source` names the file in error messages.
  static result<pre_tokenizer> from_json(const nlohmann::json& config, std::string_view source);

  // Appends the pre-tokens of `text` (valid UTF-8) to `pieces`: views of `text`, or of
  // strings in `storage` where a prefix space was added.
  status split(std::string_view text, std::vector<std::string_view>& pieces, std::deque<std::string>& storage) const;

 private:
  struct step {
    bool add_prefix_space = false;
    std::optional<regex> pattern;
  };

  status add(const nlohmann::json& config, std::string_view source, bool& byte_level);

  std::vector<step> steps_;
};

}  // namespace troupe
