#include "bench/constrained_engine.hpp"

namespace troupe {

result<constrained_engine> start_constrained_engine(caf::actor_system& system, const constrained_engine_options& o) {
  auto tok = tokenizer::load((o.tokenizer_dir.empty() ? o.dir : o.tokenizer_dir) + "/tokenizer.json");
  if (!tok) return tok.err();
  engine_options options;
  options.backend.model_dir = o.dir;
  options.backend.dummy_weights = o.dummy_weights;
  options.device = o.device;
  options.vocabulary = vocabulary_of(*tok);
  auto e = start_local_engine(system, options);
  if (!e) return e.err();
  return constrained_engine{std::move(tok).value(), options.vocabulary, std::move(e).value()};
}

}  // namespace troupe
