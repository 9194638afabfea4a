#pragma once
// What constrained decoding needs of a tokenizer: the bytes of every token, to follow the
// sampled ones through a grammar, and their trie, to mask the others. Built once per
// engine and shared read-only by its stages.
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "text/grammar/token_trie.hpp"

namespace troupe {

class tokenizer;

struct token_vocabulary {
  // token_bytes[id]: the bytes token `id` stands for; empty: never allowed by a grammar.
  explicit token_vocabulary(std::vector<std::string> token_bytes) : bytes(std::move(token_bytes)), trie(bytes) {}

  std::vector<std::string> bytes;
  token_trie trie;
};

// Special tokens (<|im_end|>, ...) get no bytes: a grammar's text is never made of them,
// they only end it (the end tokens of a constrained request).
std::shared_ptr<const token_vocabulary> vocabulary_of(const tokenizer& tok);

// A vocabulary that may still be loading: a cluster node reads its tokenizer (about a
// second for Qwen's) beside its start, not before it, since only a constrained sequence
// needs it; get() waits for it. Null when there is none; not valid() when none is needed.
using pending_vocabulary = std::shared_future<std::shared_ptr<const token_vocabulary>>;
pending_vocabulary ready_vocabulary(std::shared_ptr<const token_vocabulary> vocabulary);

}  // namespace troupe
