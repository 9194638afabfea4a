#pragma once
// The one-node CPU engine the grammar benchmarks drive: the checkpoint in `dir` with its
// tokenizer, taking constrained requests; the actor system (with add_message_types) is the
// caller's.
#include <memory>
#include <string>

#include "actors/local_engine.hpp"
#include "model/grammar/token_vocabulary.hpp"
#include "model/tokenizer.hpp"

namespace troupe {

struct constrained_engine {
  tokenizer tok;
  std::shared_ptr<const token_vocabulary> vocabulary;
  engine running;
};

result<constrained_engine> start_constrained_engine(caf::actor_system& system, const std::string& dir);

}  // namespace troupe
