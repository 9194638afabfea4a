#include "actors/stage.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>

#include "actors/grammar_warmer.hpp"
#include "actors/local_sender.hpp"
#include "base/check.hpp"
#include "transport/tags.hpp"

namespace troupe {
namespace {

using self_ptr = stage_actor::stateful_pointer<stage_state>;

// The tag of the rows stage `index` of the options' replica hands on at `step`.
uint64_t rows_tag(const stage_options& options, int index, uint64_t step) {
  return make_tag(channel::residual, uint16_t(options.link.replica << 8 | index), step);
}

// A restarted sequence's grammar state, from scratch: the constraint's compiled grammar,
// advanced over the output generated before this step (the prefix past the prompt).
void restart_constraint(stage_state& st, const step_sequence& s) {
  st.constraints.erase(s.id);
  if (!s.constraint.constrains()) return;
  const auto vocabulary = st.options.vocabulary.valid() ? st.options.vocabulary.get() : nullptr;
  TROUPE_CHECK(vocabulary && st.options.grammars, "a constrained sequence at a stage without a vocabulary");
  auto compiled = st.options.grammars->get(s.constraint.language);
  TROUPE_CHECK(compiled.ok(), "the gateway's grammar does not compile");
  auto& c = st.constraints.try_emplace(s.id, std::move(compiled).value(), s.constraint.end_token_ids, vocabulary)
                .first->second;
  for (size_t i = size_t(std::max(0, s.prompt_length)); i < s.prefix.size(); ++i)
    TROUPE_CHECK(c.advance(s.prefix[i]), "a generated token outside its grammar");
}

// The last stage's bookkeeping of a sequence's part of the plan: its token history and,
// when constrained, its grammar state.
void track(stage_state& st, const step_plan& plan, const step_sequence& s) {
  if (s.restart) {  // first step after (re)admission: rebuild the history from scratch
    token_history& h = st.histories[s.id] = {};
    for (size_t i = 0; i < s.prefix.size(); ++i) h.add(s.prefix[i], int(i) >= s.prompt_length);
    restart_constraint(st, s);
  }
  token_history& h = st.histories[s.id];
  auto constraint = st.constraints.find(s.id);
  for (int i = 0; i < s.count; ++i) {
    const int token = plan.token_ids[size_t(s.first_token + i)];
    const bool generated = s.start + i >= s.prompt_length;
    h.add(token, generated);
    if (generated && constraint != st.constraints.end())
      TROUPE_CHECK(constraint->second.advance(token), "a generated token outside its grammar");
  }
}

// The last stage's sampling requests, one per sequence that samples, in plan order.
std::vector<sample_request> sample_requests(stage_state& st, const step_plan& plan) {
  for (request_id id : plan.finished) {
    st.histories.erase(id);
    st.constraints.erase(id);
  }
  std::vector<sample_request> samples;
  for (const auto& s : plan.sequences) {
    track(st, plan, s);
    if (!s.sample) continue;
    auto constraint = st.constraints.find(s.id);
    samples.push_back({s.sampling, &st.histories[s.id], s.start + s.count,
                       constraint == st.constraints.end() ? nullptr : &constraint->second.allowed()});
  }
  return samples;
}

// Said where it happened: the scheduler may have stopped waiting (its step timeout, or a
// stage replaced while stuck), and then only this line tells what the step waited on.
void log_failure(const stage_options& options, uint64_t step, std::chrono::steady_clock::time_point began,
                 const std::string& why) {
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  std::fprintf(stderr, "troupe: %s: step %llu failed after %.1f s: %s\n", options.name.c_str(),
               static_cast<unsigned long long>(step), took, why.c_str());
}

// This stage's layers over the plan, from `hidden` (empty at the first stage); the last
// stage answers with the sampled tokens, the others hand the step on.
caf::result<step_result> run_step(self_ptr self, const step_plan& plan, std::vector<float> hidden) {
  auto& st = self->state;
  forward_batch batch{plan.token_ids, {}};
  for (const auto& s : plan.sequences) {
    const logits_rows logits = s.sample ? logits_rows::last : logits_rows::none;
    batch.sequences.push_back({s.first_token, s.count, s.start, s.block_table, logits, s.state_slot});
  }
  const auto samples = st.options.last_stage ? sample_requests(st, plan) : std::vector<sample_request>{};
  if (st.hang.count() > 0) std::this_thread::sleep_for(std::exchange(st.hang, std::chrono::milliseconds(0)));
  // A peer that failed (an expert group restarting) fails the step, not the stage: the
  // scheduler re-runs its sequences once the peer is back.
  const auto began = std::chrono::steady_clock::now();
  auto out = st.runner->run(batch, std::move(hidden), samples);
  if (!out) log_failure(st.options, plan.step, began, out.err().message);
  if (st.options.generation.replaced())
    return caf::make_error(caf::sec::runtime_error,
                           st.options.name + ": replaced while stuck in step " + std::to_string(plan.step));
  if (!out) {
    self->send(st.health, busy_atom::value, st.options.name, false);
    return caf::make_error(caf::sec::runtime_error, st.options.name + ": " + out.err().message);
  }
  self->send(st.health, progress_atom::value, st.options.name);
  if (st.options.last_stage) return step_result{plan.step, std::move(out->tokens)};
  // The scheduler plans steps only once every stage is up, and links a stage to the next
  // before it sends the stage anything else.
  TROUPE_CHECK(st.next, "a step at a stage that has no next stage");
  const stage_link& link = st.options.link;
  const auto& rows = out->hidden;
  if (auto sent = link.rows->send(link.next_peer, rows_tag(st.options, st.options.index, plan.step), rows.data(),
                                  rows.size() * sizeof(float), link.timeout);
      !sent)
    return caf::make_error(caf::sec::runtime_error, st.options.name + ": handing step " + std::to_string(plan.step) +
                                                        " on: " + sent.err().message);
  return self->delegate(st.next, step_atom::value, plan, handed_on_atom::value);
}

// The previous stage's residual rows of `plan`, from the transport.
result<std::vector<float>> rows_handed_on(const stage_options& options, const step_plan& plan) {
  auto message =
      options.link.rows->receive(rows_tag(options, options.index - 1, plan.step), ~uint64_t{0}, options.link.timeout);
  if (!message) return error{"the rows of step " + std::to_string(plan.step) + ": " + message.err().message};
  const size_t expected = plan.token_ids.size() * size_t(options.hidden_size) * sizeof(float);
  if (message->bytes.size() != expected)
    return error{"the rows of step " + std::to_string(plan.step) + " are " + std::to_string(message->bytes.size()) +
                 " bytes; its plan needs " + std::to_string(expected)};
  std::vector<float> rows(plan.token_ids.size() * size_t(options.hidden_size));
  std::memcpy(rows.data(), message->bytes.data(), expected);
  return rows;
}

}  // namespace

stage_actor::behavior_type stage(self_ptr self, stage_options options, step_runner_factory make_runner,
                                 health_monitor_actor health) {
  auto& st = self->state;
  auto runner = make_runner(options.first_layer, options.last_layer);
  st.options = std::move(options);
  st.health = health;
  if (runner) {
    st.runner = std::move(*runner);
    self->send(health, ready_atom::value, st.options.name);
    if (st.options.last_stage && st.options.grammars) {
      const unsigned warmers = std::clamp(std::thread::hardware_concurrency() / 4, 1u, 4u);
      for (unsigned i = 0; i < warmers; ++i)
        st.grammar_warmers.push_back(
            self->spawn<caf::detached + caf::linked>(grammar_warmer, st.options.grammars, st.options.vocabulary));
    }
  } else {  // e.g. no device memory left for its KV pool: its supervisor decides
    self->quit(caf::make_error(caf::sec::runtime_error, st.options.name + ": " + runner.err().message));
  }
  // Busy from a step's start: the health monitor declares the stage stuck once a step
  // takes longer than its progress timeout.
  auto busy = [=] { self->send(self->state.health, busy_atom::value, self->state.options.name, true); };
  return {
      [=](step_atom, const step_plan& plan) {
        busy();
        return run_step(self, plan, {});
      },
      [=](step_atom, const step_plan& plan, handed_on_atom) -> caf::result<step_result> {
        busy();
        const auto began = std::chrono::steady_clock::now();
        auto rows = rows_handed_on(self->state.options, plan);
        if (!rows) {
          log_failure(self->state.options, plan.step, began, rows.err().message);
          self->send(self->state.health, busy_atom::value, self->state.options.name, false);
          return caf::make_error(caf::sec::runtime_error, self->state.options.name + ": " + rows.err().message);
        }
        return run_step(self, plan, std::move(*rows));
      },
      [=](next_stage_atom, const caf::actor& next) { self->state.next = caf::actor_cast<stage_actor>(next); },
      [=](expert_group_atom, int group, const caf::actor& handle) {
        if (const auto& peers = self->state.options.expert_peers) peers->place(group, handle);
      },
      [=](crash_atom) {
        if (from_this_process(self)) self->quit(caf::make_error(caf::sec::runtime_error, "crash drill"));
      },
      [=](hang_atom, int ms) {
        if (from_this_process(self)) self->state.hang = std::chrono::milliseconds(ms);
      },
      [=](grammar_atom, const grammar& g) -> caf::result<bool> {
        auto& warmers = self->state.grammar_warmers;
        if (warmers.empty()) return false;
        return self->delegate(warmers[self->state.next_warmer++ % warmers.size()], grammar_atom::value, g);
      },
  };
}

child_spec stage_child(stage_options options, step_runner_factory make_runner, health_monitor_actor health) {
  options.generation.latest = std::make_shared<std::atomic<uint64_t>>(0);
  std::string name = options.name;
  return {std::move(name), [options, make_runner, health](caf::local_actor* parent) {
            stage_options started = options;
            started.generation.mine = ++*started.generation.latest;
            return caf::actor_cast<caf::actor>(parent->spawn<caf::detached>(stage, started, make_runner, health));
          }};
}

}  // namespace troupe
