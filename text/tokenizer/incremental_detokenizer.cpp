#include "text/tokenizer/incremental_detokenizer.hpp"

#include "base/utf8.hpp"

namespace troupe {

std::string incremental_detokenizer::push(int id) {
  pending_ += tokenizer_->token_bytes(id, skip_special_);
  std::string text;
  pending_.erase(0, append_utf8_lossy(pending_, text, /*final=*/false));
  return text;
}

std::string incremental_detokenizer::flush() {
  std::string text;
  append_utf8_lossy(pending_, text, /*final=*/true);
  pending_.clear();
  return text;
}

}  // namespace troupe
