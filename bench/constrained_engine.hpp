#pragma once
// The one-node engine the grammar benchmarks drive: the checkpoint in `dir` (or its
// config.json with dummy weights) on the CPU or the GPU, with the tokenizer of
// `tokenizer_dir`, taking constrained requests; the actor system (with add_message_types)
// is the caller's.
#include <memory>
#include <string>

#include "actors/local_engine.hpp"
#include "text/grammar/token_vocabulary.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace troupe {

struct constrained_engine {
  tokenizer tok;
  std::shared_ptr<const token_vocabulary> vocabulary;
  engine running;
};

struct constrained_engine_options {
  std::string dir = "models/demo";
  std::string tokenizer_dir;  // empty: dir
  device_kind device = device_kind::cpu;
  bool dummy_weights = false;
};

result<constrained_engine> start_constrained_engine(caf::actor_system& system, const constrained_engine_options& o);

}  // namespace troupe
