#include "text/grammar/constrained_output.hpp"

#include <algorithm>

#include "base/check.hpp"

namespace troupe {

constrained_output::constrained_output(std::shared_ptr<const compiled_grammar> g, std::vector<int> end_tokens,
                                       std::shared_ptr<const token_vocabulary> vocabulary)
    : matcher_(std::move(g)), end_tokens_(std::move(end_tokens)), vocabulary_(std::move(vocabulary)) {
  // Without one, a finished sentence would leave the sampler nothing to choose.
  TROUPE_CHECK(!end_tokens_.empty(), "a constrained output needs an end token");
}

bool constrained_output::advance(int token) {
  if (token < 0 || size_t(token) >= vocabulary_->bytes.size()) return false;
  const std::string& bytes = vocabulary_->bytes[size_t(token)];
  return !bytes.empty() && matcher_.advance(bytes);
}

const std::vector<uint64_t>& constrained_output::allowed() {
  matcher_.allowed_tokens(vocabulary_->trie, mask_);
  const bool stuck = std::all_of(mask_.begin(), mask_.end(), [](uint64_t w) { return w == 0; });
  if (matcher_.accepts_end() || stuck) {
    for (int t : end_tokens_) {
      if (t < 0) continue;
      mask_.resize(std::max(mask_.size(), size_t(t) / 64 + 1), 0);
      mask_[size_t(t) / 64] |= uint64_t(1) << (t % 64);
    }
  }
  return mask_;
}

}  // namespace troupe
