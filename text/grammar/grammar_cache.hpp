#pragma once
// Compiled grammars by grammar, the `capacity` most recently used kept: requests with the
// same response_format or tools share one compiled grammar and the token classes it has
// gathered, which are most of the cost of a mask. Their classes keep at most
// `classes_bytes` in all (compiled_grammar.hpp's classes_budget); a new grammar makes room
// by dropping the least recently used ones while more than half of that is taken. Shared
// by an engine's stages, across their restarts; thread-safe.
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "base/result.hpp"
#include "text/grammar/compiled_grammar.hpp"

namespace troupe {

class grammar_cache {
 public:
  grammar_cache(size_t capacity, size_t classes_bytes)
      : capacity_(capacity), budget_(std::make_shared<classes_budget>(classes_bytes)) {}

  // The compiled form of `g`, compiled on first use; an error as compile gives it.
  result<std::shared_ptr<const compiled_grammar>> get(const grammar& g);

  size_t size() const;
  // What the token classes of its grammars (and of those dropped but still in use) take.
  size_t classes_bytes() const { return budget_->used(); }

 private:
  using entry = std::pair<std::string, std::shared_ptr<const compiled_grammar>>;

  size_t capacity_;
  std::shared_ptr<classes_budget> budget_;
  mutable std::mutex mutex_;
  std::list<entry> recent_;  // most recently used first
  std::unordered_map<std::string, std::list<entry>::iterator> by_key_;
};

// An engine's cache, shared by its stages. Requests with the same response_format or tools
// reuse a compiled grammar; each keeps a bitset of the vocabulary per grammar context it
// met, so only 64 grammars, and 512 MiB of those bitsets, are kept.
std::shared_ptr<grammar_cache> make_engine_grammar_cache();

}  // namespace troupe
