#include "text/grammar/grammar_cache.hpp"

#include <msgpack.hpp>

namespace troupe {

result<std::shared_ptr<const compiled_grammar>> grammar_cache::get(const grammar& g) {
  // The grammar's wire form is its identity: equal grammars pack to equal bytes.
  msgpack::sbuffer packed;
  msgpack::pack(packed, g);
  std::string key(packed.data(), packed.size());
  {
    std::lock_guard lock(mutex_);
    if (auto found = by_key_.find(key); found != by_key_.end()) {
      recent_.splice(recent_.begin(), recent_, found->second);
      return found->second->second;
    }
  }
  // Compiled outside the lock (a large enum takes milliseconds): a stage looking up a
  // cached grammar at a step never waits on a warmer compiling another.
  auto compiled = compiled_grammar::compile(g, budget_);
  if (!compiled) return compiled.err();
  auto made = std::make_shared<const compiled_grammar>(std::move(compiled).value());
  std::lock_guard lock(mutex_);
  if (auto found = by_key_.find(key); found != by_key_.end()) {  // compiled meanwhile by another: one is kept
    recent_.splice(recent_.begin(), recent_, found->second);
    return found->second->second;
  }
  while (!recent_.empty() && (recent_.size() >= capacity_ || budget_->used() > budget_->limit() / 2)) {
    by_key_.erase(recent_.back().first);
    recent_.pop_back();
  }
  recent_.emplace_front(key, std::move(made));
  by_key_[std::move(key)] = recent_.begin();
  return recent_.front().second;
}

std::shared_ptr<grammar_cache> make_engine_grammar_cache() {
  return std::make_shared<grammar_cache>(64, size_t{512} << 20);
}

size_t grammar_cache::size() const {
  std::lock_guard lock(mutex_);
  return recent_.size();
}

}  // namespace troupe
