#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/actors.hpp"
#include "actors/expert_peer_handles.hpp"
#include "actors/supervisor.hpp"
#include "model/step_runner.hpp"
#include "text/grammar/constrained_output.hpp"
#include "text/grammar/grammar_cache.hpp"
#include "transport/transport.hpp"

namespace troupe {

// Where a stage's residual rows go to the next stage and come from the previous one: the
// transport of its process, the next stage's peer on it, and how long a stage waits for
// rows whose plan has come.
struct stage_link {
  std::shared_ptr<transport> rows;
  int next_peer = -1;
  std::chrono::milliseconds timeout{60000};
  // A cluster's replica (its index): tags carry it, so replicas sharing a process never take
  // each other's rows. Up to 256 replicas of up to 256 stages.
  int replica = 0;
};

// Which start of its stage an actor is. A stage replaced while stuck finds, when its step
// returns, that a later one has started, and drops what it computed: its successor's
// pipeline may be running newer steps on the same KV blocks.
struct stage_generation {
  std::shared_ptr<std::atomic<uint64_t>> latest;  // shared by every start of the stage
  uint64_t mine = 0;
  bool replaced() const { return latest && latest->load() != mine; }
};

struct stage_options {
  std::string name;
  int index = 0;  // in pipeline order
  int first_layer = 0;
  int last_layer = 0;      // exclusive
  bool last_stage = true;  // holds the model's last layer: computes logits and samples
  int hidden_size = 0;
  stage_link link;  // unused by a pipeline of one stage
  // Constrained decoding, at the stage that samples: the tokenizer's vocabulary (waited
  // for once a constrained sequence comes) and the engine's compiled grammars.
  pending_vocabulary vocabulary;
  std::shared_ptr<grammar_cache> grammars;
  // A GPU stage with expert groups on other GPUs: where its runner reaches them (the
  // stage keeps it up to date); null otherwise.
  std::shared_ptr<expert_peer_handles> expert_peers;
  stage_generation generation;  // set by stage_child at each start
};

struct stage_state {
  static inline const char* name = "stage";
  stage_options options;
  std::unique_ptr<step_runner> runner;
  stage_actor next;  // where steps go on (all but the last stage)
  // The last stage's only: what the penalties count and, for constrained sequences, where
  // the output stands in its grammar.
  std::unordered_map<request_id, token_history> histories;
  std::unordered_map<request_id, constrained_output> constraints;
  health_monitor_actor health;
  // The last stage's, when it has a grammar cache: a few, taken in turn, so that new schemas
  // arriving together are readied side by side.
  std::vector<grammar_warmer_actor> grammar_warmers;
  size_t next_warmer = 0;
  std::chrono::milliseconds hang{0};  // a drill's: how long the next step blocks
};

// Runs its layers of each step plan. Its KV pool starts empty at every (re)start: the
// scheduler re-prefills the sequences it had, and the last stage rebuilds their token
// histories and grammar states from the tokens of that re-prefill.
stage_actor::behavior_type stage(stage_actor::stateful_pointer<stage_state> self, stage_options options,
                                 step_runner_factory make_runner, health_monitor_actor health);

// How a supervisor starts the stage: detached (a step blocks its thread), each start one
// generation later than the last.
child_spec stage_child(stage_options options, step_runner_factory make_runner, health_monitor_actor health);

}  // namespace troupe
