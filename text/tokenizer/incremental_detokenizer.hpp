#pragma once
// Text for a stream of generated ids, as they come. A character whose bytes span tokens
// waits until it is complete, so each piece of text is final; joined, the outputs of
// push() and flush() equal tokenizer::decode of all the ids.
#include <string>

#include "text/tokenizer/tokenizer.hpp"

namespace troupe {

class incremental_detokenizer {
 public:
  // `t` must outlive this object.
  explicit incremental_detokenizer(const tokenizer& t, bool skip_special = false)
      : tokenizer_(&t), skip_special_(skip_special) {}

  // The text that `id` completes; often empty mid-character.
  std::string push(int id);

  // What is held back at the end of the stream, as U+FFFD; the next push starts afresh.
  std::string flush();

 private:
  const tokenizer* tokenizer_;
  bool skip_special_;
  std::string pending_;  // bytes of a character not yet complete
};

}  // namespace troupe
