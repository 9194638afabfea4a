#pragma once
#include <chrono>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/actors.hpp"

namespace troupe {

struct scheduler_options {
  int max_num_seqs = 64;
  int max_num_batched_tokens = 2048;  // prefill is chunked to fit beside the decode tokens
  int max_model_len = 4096;
  // Re-prefills after failures, with no token generated between them, before a request
  // errors: a bound for a request that fails every step it is in. A request that gets on
  // between faults starts counting again, so a long one outlives any number of node
  // restarts (a chaos drill's 20 kills cost a request up to about 40 re-prefills: a kill
  // can fail a step or two besides the one it hit).
  int max_recoveries = 32;
  std::chrono::seconds stage_timeout{30};  // without a working pipeline this long, requests error
  int pipeline_stages = 1;                 // stage_0 .. stage_{n-1}: steps go through all of them
  // Steps in flight at once, each over its own share of the sequences (micro-batches);
  // 0: one per pipeline stage. 1 runs one step at a time.
  int micro_batches = 0;
  // expert_group_0 .. expert_group_{n-1}: the stages' MoE layers need them all, so no step
  // is run while one is down (its node's process restarting). 0: not followed.
  int expert_groups = 0;
  std::string component_prefix;  // its stages' names start so (a cluster's replica: "main/")
  // A step not answered within this fails (and its sequences are re-run); a cluster's
  // step_timeout_s. In one process a step always ends.
  caf::duration step_timeout = caf::infinite;
};

struct scheduler_state {
  static inline const char* name = "scheduler";
  struct sequence {
    generation_request request;
    caf::actor sink;
    std::vector<int> tokens;  // prompt, then every generated token
    int generated = 0;
    int computed = 0;  // leading tokens whose keys and values are cached
    std::vector<int> blocks;
    bool restart = true;            // its next span is the first since (re)admission
    int cached_prompt_tokens = -1;  // from the first admission's prefix-cache hit
    int recoveries = 0;             // since its last generated token
    bool cancelled = false;
    int state_slot = -1;            // its recurrent state (models with linear-attention layers)
    bool in_step = false;           // in a step in flight: the next plans leave it out
    bool readying_grammar = false;  // not yet waiting: the last stage readies its grammar
  };
  scheduler_options options;
  std::unordered_map<request_id, sequence> sequences;
  std::deque<request_id> waiting;
  std::vector<request_id> running;        // admission order: the oldest gets blocks first
  std::vector<stage_actor> stages;        // in pipeline order; null while one is down
  std::vector<caf::actor> expert_groups;  // null while one is down
  kv_manager_actor kv;
  bool kv_in_flight = false;  // a KV request for the next step is out
  int steps_in_flight = 0;    // each over sequences of its own
  // Bumped by every recovery: what answers a request sent before it is stale.
  uint64_t epoch = 0;
  bool tick_pending = false;
  int failed_steps = 0;                              // in a row: the next try waits longer each time (up to 1.6 s)
  std::chrono::steady_clock::time_point stage_lost;  // since when requests wait on a failed engine
  uint64_t next_step = 1;
  kv_step_request pending_kv;        // releases and commits for the next KV request
  std::vector<request_id> finished;  // for the stages, with the next plan
  engine_stats stats;
};

// Iteration-level continuous batching: each step admits what fits (FCFS), runs one plan
// through the stages, and streams the sampled tokens to each request's sink. A failed step
// or a stage that goes down (its KV memory with it) re-queues every running sequence.
//
// A pipeline of several stages runs as many steps at once (micro-batches), each over its
// own share of the sequences, so that every stage computes while the others do: with two
// stages, one half of the sequences' step is in the second stage while the other half's is
// in the first. A sequence is in one step at a time. Every stage takes steps in the order the first one did, so a
// step left over from before a recovery ends at each stage before the steps after it.
scheduler_actor::behavior_type scheduler(scheduler_actor::stateful_pointer<scheduler_state> self,
                                         scheduler_options options, kv_manager_actor kv);

}  // namespace troupe
