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
                                 std::shared_ptr<const qwen3_moe> model,
                                 std::shared_ptr<expert_executor> experts, health_monitor_actor health) {
  auto& st = self->state;
  st.kv = std::make_unique<kv_pool>(model->config(), options.first_layer,
                                    options.last_layer - options.first_layer, options.num_blocks,
                                    options.block_size);
  st.options = std::move(options);
  st.model = std::move(model);
  st.experts = std::move(experts);
  st.health = health;
  self->send(health, ready_atom::value, st.options.name);
  return {
      [=](step_atom, const step_plan& plan) -> caf::result<step_result> {
        auto& st = self->state;
        const qwen3_moe& m = *st.model;
        for (request_id id : plan.finished) st.histories.erase(id);
        forward_batch batch{plan.token_ids, {}};
        for (const auto& s : plan.sequences) batch.sequences.push_back(to_span(st, plan, s));
        auto hidden = m.embed(batch);
        // A peer that failed (an expert group restarting) fails the step, not the stage:
        // the scheduler re-runs its sequences once the peer is back.
        if (auto r = m.run_layers(st.options.first_layer, st.options.last_layer, batch, *st.kv, *st.experts, hidden); !r)
          return caf::make_error(caf::sec::runtime_error, st.options.name + ": " + r.err().message);
        const int vocab = m.config().vocab_size;
        auto logits = m.logits(batch, hidden);
        step_result out{plan.step, {}};
        size_t row = 0;
        for (const auto& s : plan.sequences) {
          if (!s.sample) continue;
          out.tokens.push_back(sample(logits.data() + row++ * size_t(vocab), vocab, s.sampling,
                                      st.histories[s.id], s.start + s.count));
        }
        self->send(st.health, progress_atom::value, st.options.name);
        return out;
      },
      [=](crash_atom) { self->quit(caf::make_error(caf::sec::runtime_error, "crash drill")); },
  };
}

}  // namespace troupe
