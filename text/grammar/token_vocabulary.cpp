#include "text/grammar/token_vocabulary.hpp"

#include "text/tokenizer/tokenizer.hpp"

namespace troupe {

std::shared_ptr<const token_vocabulary> vocabulary_of(const tokenizer& tok) {
  std::vector<std::string> bytes;
  bytes.reserve(size_t(tok.vocab_size()));
  for (int id = 0; id < tok.vocab_size(); ++id)
    bytes.emplace_back(tok.is_special(id) ? std::string_view() : tok.token_bytes(id, false));
  return std::make_shared<const token_vocabulary>(std::move(bytes));
}

pending_vocabulary ready_vocabulary(std::shared_ptr<const token_vocabulary> vocabulary) {
  std::promise<std::shared_ptr<const token_vocabulary>> ready;
  ready.set_value(std::move(vocabulary));
  return ready.get_future().share();
}

}  // namespace troupe
