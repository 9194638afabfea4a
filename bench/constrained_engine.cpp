#include "bench/constrained_engine.hpp"

namespace troupe {

result<constrained_engine> start_constrained_engine(caf::actor_system& system, const std::string& dir) {
  auto tok = tokenizer::load(dir + "/tokenizer.json");
  if (!tok) return tok.err();
  engine_options options;
  options.backend.model_dir = dir;
  options.vocabulary = vocabulary_of(*tok);
  auto e = start_local_engine(system, options);
  if (!e) return e.err();
  return constrained_engine{std::move(tok).value(), options.vocabulary, std::move(e).value()};
}

}  // namespace troupe
