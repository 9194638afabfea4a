#include "actors/stage.hpp"

namespace troupe {
namespace {

// The plan's part of a sequence as the model sees it, updating its token history.
sequence_span to_span(stage_state& st, const step_plan& plan, const step_sequence& s) {
  if (s.restart) {  // first step after (re)admission: rebuild the history from scratch
    token_history& h = st.histories[s.id] = {};
    for (size_t i = 0; i < s.prefix.size(); ++i) h.add(s.prefix[i], int(i) >= s.prompt_length);
  }
  token_history& h = st.histories[s.id];
  for (int i = 0; i < s.count; ++i) h.add(plan.token_ids[size_t(s.first_token + i)], s.start + i >= s.prompt_length);
  return {s.first_token, s.count, s.start, s.block_table, s.sample ? logits_rows::last : logits_rows::none};
}

}  // namespace

stage_actor::behavior_type stage(stage_actor::stateful_pointer<stage_state> self, stage_options options,
                                 step_runner_factory make_runner, health_monitor_actor health) {
  auto& st = self->state;
  auto runner = make_runner(options.first_layer, options.last_layer);
  st.options = std::move(options);
  st.health = health;
  if (runner) {
    st.runner = std::move(*runner);
    self->send(health, ready_atom::value, st.options.name);
  } else {  // e.g. no device memory left for its KV pool: its supervisor decides
    self->quit(caf::make_error(caf::sec::runtime_error, st.options.name + ": " + runner.err().message));
  }
  return {
      [=](step_atom, const step_plan& plan) -> caf::result<step_result> {
        auto& st = self->state;
        for (request_id id : plan.finished) st.histories.erase(id);
        forward_batch batch{plan.token_ids, {}};
        std::vector<sample_request> samples;
        for (const auto& s : plan.sequences) {
          batch.sequences.push_back(to_span(st, plan, s));
          if (s.sample) samples.push_back({s.sampling, &st.histories[s.id], s.start + s.count});
        }
        // A peer that failed (an expert group restarting) fails the step, not the stage:
        // the scheduler re-runs its sequences once the peer is back.
        auto tokens = st.runner->run(batch, samples);
        if (!tokens) return caf::make_error(caf::sec::runtime_error, st.options.name + ": " + tokens.err().message);
        self->send(st.health, progress_atom::value, st.options.name);
        return step_result{plan.step, std::move(*tokens)};
      },
      [=](crash_atom) { self->quit(caf::make_error(caf::sec::runtime_error, "crash drill")); },
  };
}

}  // namespace troupe
