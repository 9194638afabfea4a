#include "actors/scheduler.hpp"

#include <cstdio>

#include <algorithm>
#include <utility>

#include "base/check.hpp"
#include "engine/batch_policy.hpp"

namespace troupe {
namespace {

using self_ptr = scheduler_actor::stateful_pointer<scheduler_state>;
using sequence = scheduler_state::sequence;

void schedule(self_ptr self);

void send_event(const sequence& s, std::vector<sampled_token> tokens, finish_reason finish, std::string message = {}) {
  caf::anon_send(s.sink, token_event{s.request.id, std::move(tokens), uint8_t(finish), std::move(message),
                                     int(s.request.prompt.size()), std::max(0, s.cached_prompt_tokens)});
}

// Ends a sequence: its blocks go back with the next KV request, stages drop its state.
void retire(self_ptr self, request_id id) {
  auto& st = self->state;
  st.running.erase(std::remove(st.running.begin(), st.running.end(), id), st.running.end());
  st.waiting.erase(std::remove(st.waiting.begin(), st.waiting.end(), id), st.waiting.end());
  st.pending_kv.releases.push_back(id);
  st.finished.push_back(id);
  st.sequences.erase(id);
}

// Back to the head of the queue; it will be re-prefilled from prompt + generated tokens.
void requeue(scheduler_state& st, request_id id) {
  sequence& s = st.sequences[id];
  s.in_step = false;
  s.computed = 0;
  s.blocks.clear();
  s.state_slot = -1;
  s.restart = true;
  st.waiting.push_front(id);
}

bool stages_up(const scheduler_state& st) {
  return std::all_of(st.stages.begin(), st.stages.end(), [](const stage_actor& s) { return bool(s); });
}

bool pipeline_up(const scheduler_state& st) {
  return stages_up(st) &&
         std::all_of(st.expert_groups.begin(), st.expert_groups.end(), [](const caf::actor& g) { return bool(g); });
}

// Ticks until the pipeline works again (or stage_timeout gives up on its requests). After
// steps that failed in a row each try waits twice as long, up to 1.6 s: a link that is
// down for a second (UCX reconnects it) then costs the running requests a few of their
// max_recoveries, not ten.
void tick_soon(self_ptr self) {
  if (std::exchange(self->state.tick_pending, true)) return;
  const int backoff = std::min(self->state.failed_steps, 4);
  self->delayed_send(self, std::chrono::milliseconds(100 << backoff), tick_atom::value);
}

// A step failed or a stage went down: some stage's KV memory can no longer be trusted, so
// every running sequence is re-queued (oldest first), the block map starts empty, and
// whatever answers requests sent before now is ignored.
void recover(self_ptr self) {
  auto& st = self->state;
  st.kv_in_flight = false;
  st.steps_in_flight = 0;
  ++st.epoch;
  if (st.stage_lost == std::chrono::steady_clock::time_point{}) st.stage_lost = std::chrono::steady_clock::now();
  self->send(st.kv, reset_atom::value);
  st.pending_kv = {};
  std::vector<request_id> running = std::move(st.running);
  st.running.clear();
  for (auto it = running.rbegin(); it != running.rend(); ++it) {
    sequence& s = st.sequences[*it];
    if (s.cancelled || ++s.recoveries > st.options.max_recoveries) {
      if (!s.cancelled)
        send_event(s, {}, finish_reason::error, "the engine failed repeatedly while running this request");
      st.sequences.erase(*it);
      st.finished.push_back(*it);
      continue;
    }
    ++st.stats.recoveries;
    requeue(st, *it);
  }
  for (request_id id : st.waiting) st.sequences[id].blocks.clear();
  tick_soon(self);
}

void on_step_result(self_ptr self, const step_plan& plan, const step_result& result) {
  auto& st = self->state;
  --st.steps_in_flight;
  for (const auto& span : plan.sequences) st.sequences[span.id].in_step = false;
  st.stage_lost = {};
  st.failed_steps = 0;
  ++st.stats.steps;
  size_t next = 0;
  std::vector<request_id> done;
  for (const auto& span : plan.sequences) {
    sequence& s = st.sequences[span.id];
    s.computed += span.count;
    st.pending_kv.commits.push_back(
        {span.id, {plan.token_ids.begin() + span.first_token, plan.token_ids.begin() + span.first_token + span.count}});
    if (!span.sample) continue;
    const sampled_token& t = result.tokens[next++];
    if (s.cancelled) {
      done.push_back(span.id);
      continue;
    }
    s.tokens.push_back(t.token);
    ++s.generated;
    s.recoveries = 0;
    const auto& stops = s.request.stop_token_ids;
    finish_reason finish = finish_reason::none;
    if (std::find(stops.begin(), stops.end(), t.token) != stops.end())
      finish = finish_reason::stop;
    else if (s.generated >= s.request.max_tokens || int(s.tokens.size()) >= st.options.max_model_len)
      finish = finish_reason::length;
    send_event(s, {t}, finish);
    if (finish != finish_reason::none) done.push_back(span.id);
  }
  for (request_id id : done) retire(self, id);
  schedule(self);
}

void run_step(self_ptr self, step_plan plan) {
  auto& st = self->state;
  // Every stage was up when the KV request went out, and one going down since would have
  // made its reply stale. An expert group that went down since fails the step instead.
  TROUPE_CHECK(stages_up(st), "a step planned without every stage");
  self->request(st.stages.front(), st.options.step_timeout, step_atom::value, plan)
      .then(
          [=, epoch = st.epoch](const step_result& r) {
            if (epoch == self->state.epoch) on_step_result(self, plan, r);
          },
          [=, epoch = st.epoch](const caf::error& e) {
            if (epoch != self->state.epoch) return;
            std::fprintf(stderr, "troupe: step %llu failed (%s); its sequences run again\n",
                         static_cast<unsigned long long>(plan.step), self->system().render(e).c_str());
            // The last stage may not have seen the plan: it hears of these again.
            auto& finished = self->state.finished;
            finished.insert(finished.end(), plan.finished.begin(), plan.finished.end());
            ++self->state.failed_steps;
            recover(self);
          });
}

void on_kv_reply(self_ptr self, const kv_step_request& asked, const kv_step_reply& reply, int budget) {
  auto& st = self->state;
  step_plan plan;
  plan.step = st.next_step++;
  plan.finished = std::move(st.finished);
  st.finished.clear();
  auto add_span = [&](request_id id, int count) {
    sequence& s = st.sequences[id];
    step_sequence span{id,
                       int(plan.token_ids.size()),
                       count,
                       s.computed,
                       int(s.request.prompt.size()),
                       s.blocks,
                       s.computed + count == int(s.tokens.size()),
                       s.request.sampling,
                       s.restart,
                       {},
                       {},
                       s.state_slot};
    if (s.restart) {
      span.prefix.assign(s.tokens.begin(), s.tokens.begin() + s.computed);
      if (!s.request.output_grammar.rules.empty())
        span.constraint = {s.request.output_grammar, s.request.stop_token_ids};
    }
    s.restart = false;
    plan.token_ids.insert(plan.token_ids.end(), s.tokens.begin() + s.computed, s.tokens.begin() + s.computed + count);
    plan.sequences.push_back(std::move(span));
  };

  bool changed = !asked.releases.empty();
  std::vector<request_id> preempted;
  for (size_t i = 0; i < asked.grows.size(); ++i) {
    const request_id id = asked.grows[i].id;
    sequence& s = st.sequences[id];
    if (reply.grown[i].empty()) {  // no room: give its blocks back and retry it later
      preempted.push_back(id);
      continue;
    }
    s.blocks = reply.grown[i];
    add_span(id, asked.grows[i].positions - s.computed);
  }
  for (size_t i = 0; i < reply.admissions.size(); ++i) {
    const kv_admission& a = reply.admissions[i];
    if (!a.admitted) break;
    const request_id id = asked.admits[i].id;
    sequence& s = st.sequences[id];
    s.blocks = a.blocks;
    s.state_slot = a.state_slot;
    s.computed = a.cached_tokens;
    if (s.cached_prompt_tokens < 0) s.cached_prompt_tokens = a.cached_tokens;
    st.waiting.erase(std::find(st.waiting.begin(), st.waiting.end(), id));
    st.running.push_back(id);
    changed = true;
    if (const int count = admitted_tokens(int(s.tokens.size()), s.computed, budget); count > 0) add_span(id, count);
  }
  for (auto it = preempted.rbegin(); it != preempted.rend(); ++it) {
    st.running.erase(std::find(st.running.begin(), st.running.end(), *it));
    st.pending_kv.releases.push_back(*it);
    st.finished.push_back(*it);
    requeue(st, *it);
    ++st.stats.preemptions;
    changed = true;
  }
  st.kv_in_flight = false;
  if (plan.sequences.empty()) {
    if (changed) schedule(self);  // blocks were freed or handed out: try again now
    return;
  }
  for (const auto& span : plan.sequences) st.sequences[span.id].in_step = true;
  if (st.steps_in_flight++ > 0) ++st.stats.overlapped_steps;
  run_step(self, std::move(plan));
  schedule(self);  // the next micro-batch, while this one is in the first stage
}

// How many steps may be in flight at once.
int micro_batches(const scheduler_options& o) {
  return std::max(1, o.micro_batches > 0 ? o.micro_batches : o.pipeline_stages);
}

// A sequence whose grammar the last stage readied (or failed to: its first step compiles
// the grammar then) joins the queue.
void wait_for_admission(self_ptr self, request_id id) {
  auto& st = self->state;
  auto it = st.sequences.find(id);
  if (it == st.sequences.end() || !it->second.readying_grammar) return;
  it->second.readying_grammar = false;
  st.waiting.push_back(id);
  schedule(self);
}

void schedule(self_ptr self) {
  auto& st = self->state;
  if (st.kv_in_flight || st.steps_in_flight >= micro_batches(st.options)) return;
  std::vector<request_id> cancelled;
  for (const auto& [id, s] : st.sequences)
    if (s.cancelled && !s.in_step) cancelled.push_back(id);
  for (request_id id : cancelled) retire(self, id);
  if (!pipeline_up(st)) return tick_soon(self);
  if (st.waiting.empty() && st.running.empty()) {
    // Idle: hand back the blocks of the last finished sequences now, not at the next step.
    if (st.pending_kv.releases.empty()) return;
    kv_step_request flush = std::move(st.pending_kv);
    st.pending_kv = {};
    self->request(st.kv, caf::infinite, kv_step_atom::value, std::move(flush)).then([](const kv_step_reply&) {});
    return;
  }
  std::vector<sequence_progress> progress;
  for (request_id id : st.running) {
    const sequence& s = st.sequences[id];
    progress.push_back({id, int(s.tokens.size()), s.computed, s.in_step});
  }
  const batch_choice choice = choose_batch(
      {st.options.max_num_seqs, st.options.max_num_batched_tokens, micro_batches(st.options)}, progress, st.waiting);
  if (choice.empty()) return;  // every running sequence is in a step
  const int budget = choice.budget_left;
  kv_step_request req;
  req.grows = choice.grows;
  for (request_id id : choice.admits) req.admits.push_back({id, st.sequences[id].tokens});
  st.kv_in_flight = true;
  req.releases = std::move(st.pending_kv.releases);
  req.commits = std::move(st.pending_kv.commits);
  st.pending_kv = {};
  self->request(st.kv, caf::infinite, kv_step_atom::value, req)
      .then(
          [=, epoch = st.epoch](const kv_step_reply& reply) {
            if (epoch == self->state.epoch) on_kv_reply(self, req, reply, budget);
          },
          [=, epoch = st.epoch](const caf::error&) {
            if (epoch == self->state.epoch) recover(self);
          });
}

}  // namespace

scheduler_actor::behavior_type scheduler(scheduler_actor::stateful_pointer<scheduler_state> self,
                                         scheduler_options options, kv_manager_actor kv) {
  self->state.options = options;
  self->state.kv = kv;
  self->state.stages.resize(size_t(options.pipeline_stages));
  self->state.expert_groups.resize(size_t(options.expert_groups));
  self->set_down_handler([=](caf::down_msg& msg) {
    for (auto& stage : self->state.stages)
      if (stage && msg.source == stage.address()) {
        stage = nullptr;
        recover(self);
      }
    // An expert group holds no KV memory: a step that needed it fails on its own, and none
    // starts until it is back. GPU stages stop reaching it (expert parallelism).
    auto& groups = self->state.expert_groups;
    for (int g = 0; g < int(groups.size()); ++g)
      if (groups[size_t(g)] && msg.source == groups[size_t(g)].address()) {
        groups[size_t(g)] = nullptr;
        for (const stage_actor& stage : self->state.stages)
          if (stage) self->send(stage, expert_group_atom::value, g, caf::actor{});
      }
  });
  return {
      [=](submit_atom, generation_request& r, caf::actor& sink) {
        auto& st = self->state;
        sequence s{std::move(r), std::move(sink), {}, 0, 0, {}, true, -1, 0, false};
        s.tokens = s.request.prompt;
        const int prompt = int(s.tokens.size());
        if (prompt == 0 || prompt >= st.options.max_model_len) {
          send_event(s, {}, finish_reason::error,
                     "the prompt has " + std::to_string(prompt) + " tokens; this model takes 1 to " +
                         std::to_string(st.options.max_model_len - 1));
          return;
        }
        const request_id id = s.request.id;
        sequence& added = st.sequences[id] = std::move(s);
        if (added.request.output_grammar.rules.empty() || !st.stages.back()) {
          st.waiting.push_back(id);
          return schedule(self);
        }
        // Compiling a new grammar and gathering its first mask would stall a step with every
        // sequence in it: the last stage does both beside its steps before this one waits.
        added.readying_grammar = true;
        self->request(st.stages.back(), st.options.stage_timeout, grammar_atom::value, added.request.output_grammar)
            .then([=](bool) { wait_for_admission(self, id); },
                  [=](const caf::error&) { wait_for_admission(self, id); });
      },
      [=](cancel_atom, request_id id) {
        auto& st = self->state;
        auto it = st.sequences.find(id);
        if (it == st.sequences.end()) return;
        // A KV request or step in flight may still name it: it is retired when none is.
        it->second.cancelled = true;
        schedule(self);
      },
      [=](stats_atom) -> caf::result<engine_stats> {
        auto& st = self->state;
        st.stats.running = int(st.running.size());
        st.stats.waiting = int(st.sequences.size() - st.running.size());
        auto promise = self->make_response_promise<engine_stats>();
        self->request(st.kv, caf::infinite, usage_atom::value).then([=](const kv_usage& u) mutable {
          engine_stats out = self->state.stats;
          out.kv = u;
          promise.deliver(out);
        });
        return promise;
      },
      [=](child_up_atom, const std::string& name, const caf::actor& child) {
        auto& st = self->state;
        for (int g = 0; g < int(st.expert_groups.size()); ++g)
          if (name == st.options.component_prefix + expert_group_name(g)) {
            st.expert_groups[size_t(g)] = child;
            self->monitor(child);
            // GPU stages reach the groups on other GPUs there (expert parallelism).
            for (const stage_actor& stage : st.stages)
              if (stage) self->send(stage, expert_group_atom::value, g, child);
            return schedule(self);
          }
        int k = 0;
        while (k < int(st.stages.size()) && name != st.options.component_prefix + stage_name(k)) ++k;
        if (k == int(st.stages.size())) return;
        // A restart whose down message has not come yet: its KV memory is gone all the same.
        if (st.stages[size_t(k)]) recover(self);
        auto stage = caf::actor_cast<stage_actor>(child);
        st.stages[size_t(k)] = stage;
        self->monitor(child);
        if (k > 0 && st.stages[size_t(k - 1)]) self->send(st.stages[size_t(k - 1)], next_stage_atom::value, child);
        if (k + 1 < int(st.stages.size()) && st.stages[size_t(k + 1)])
          self->send(stage, next_stage_atom::value, caf::actor_cast<caf::actor>(st.stages[size_t(k + 1)]));
        for (int g = 0; g < int(st.expert_groups.size()); ++g)
          if (const caf::actor& group = st.expert_groups[size_t(g)])
            self->send(stage, expert_group_atom::value, g, group);
        schedule(self);
      },
      // After a recovery: retry once every stage is up, or give up on every request once
      // the engine has not worked for stage_timeout.
      [=](tick_atom) {
        auto& st = self->state;
        st.tick_pending = false;
        const auto now = std::chrono::steady_clock::now();
        const bool up = pipeline_up(st);
        // The clock runs only while requests wait on an engine that does not work.
        if (st.sequences.empty())
          st.stage_lost = {};
        else if (!up && st.stage_lost == std::chrono::steady_clock::time_point{})
          st.stage_lost = now;
        if (st.stage_lost != std::chrono::steady_clock::time_point{} &&
            now - st.stage_lost > st.options.stage_timeout) {
          for (auto& [id, s] : st.sequences) {
            if (!s.cancelled) send_event(s, {}, finish_reason::error, "no stage of the engine is available");
            st.finished.push_back(id);
          }
          st.sequences.clear();
          st.waiting.clear();
          st.running.clear();
          st.stage_lost = {};
        }
        if (!up) return tick_soon(self);
        schedule(self);
      },
  };
}

}  // namespace troupe
