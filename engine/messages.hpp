#pragma once
// Every message that actors exchange: plain structs, serializable by msgpack and (with
// actors/caf_fields.hpp) CAF through TROUPE_FIELDS, so the same code runs in one process
// and across nodes. Below gateway/ and actors/, which both speak them.
#include <cstdint>
#include <string>
#include <vector>

#include "base/fields.hpp"
#include "model/sampling.hpp"
#include "text/grammar/grammar.hpp"
#include "transport/expert_parallel.hpp"  // expert_session, expert_step: stage -> expert group

namespace troupe {

using request_id = uint64_t;

// gateway -> scheduler: generate for one prompt. Under constrained decoding (an
// output_grammar with rules) the output is a sentence of the grammar, and one of
// stop_token_ids (never empty then) may end it only where the sentence is whole.
struct generation_request {
  request_id id = 0;
  std::vector<int> prompt;
  sampling_params sampling;
  int max_tokens = 16;
  std::vector<int> stop_token_ids;  // eos ids (unless ignore_eos) and the client's stop ids
  grammar output_grammar;
  TROUPE_FIELDS(generation_request, id, prompt, sampling, max_tokens, stop_token_ids, output_grammar)
};

// What the last stage needs to constrain a sequence's sampling: the grammar of its output
// and the tokens that may end it. No rules: unconstrained.
struct output_constraint {
  grammar language;
  std::vector<int> end_token_ids;
  bool constrains() const { return !language.rules.empty(); }
  TROUPE_FIELDS(output_constraint, language, end_token_ids)
};

enum class finish_reason : uint8_t { none, stop, length, cancelled, error };

// scheduler -> gateway: new tokens of a request, in order, each exactly once. The last
// event of a request has a finish reason other than none (and a message if error).
struct token_event {
  request_id id = 0;
  std::vector<sampled_token> tokens;
  uint8_t finish = uint8_t(finish_reason::none);
  std::string error_message;
  int prompt_tokens = 0;
  int cached_prompt_tokens = 0;
  TROUPE_FIELDS(token_event, id, tokens, finish, error_message, prompt_tokens, cached_prompt_tokens)
};

// One sequence's part of a step: its new tokens tokens[first_token, first_token + count)
// at positions start.., its KV blocks, and whether the step ends with sampling its next
// token (false for a prefill chunk that is not the prompt's last).
struct step_sequence {
  request_id id = 0;
  int first_token = 0;
  int count = 0;
  int start = 0;
  int prompt_length = 0;  // positions from here on hold generated tokens (for penalties)
  std::vector<int> block_table;
  bool sample = false;
  sampling_params sampling;
  // The first step after (re)admission sets restart and carries the tokens before `start`
  // (a prefix-cache hit) and the output's constraint, so the last stage can rebuild what
  // the penalties count and where the output stands in its grammar.
  bool restart = false;
  std::vector<int> prefix;
  output_constraint constraint;
  int state_slot = -1;  // its recurrent state in linear-attention layers (none without them)
  TROUPE_FIELDS(step_sequence, id, first_token, count, start, prompt_length, block_table, sample, sampling, restart,
                prefix, constraint, state_slot)
};

// scheduler -> first stage: one iteration of continuous batching.
struct step_plan {
  uint64_t step = 0;
  std::vector<int> token_ids;
  std::vector<step_sequence> sequences;
  std::vector<request_id> finished;  // sequences whose per-sequence state stages may drop
  TROUPE_FIELDS(step_plan, step, token_ids, sequences, finished)
};

// last stage -> scheduler: the sampled token of every sequence with sample == true, in
// plan order.
struct step_result {
  uint64_t step = 0;
  std::vector<sampled_token> tokens;
  TROUPE_FIELDS(step_result, step, tokens)
};

// kv_manager's answer to admitting a sequence: blocks already holding its prompt's
// prefix (prefix cache), how many tokens they cover, and for a model with linear-attention
// layers the slot of its recurrent state (-1 otherwise).
struct kv_admission {
  bool admitted = false;
  std::vector<int> blocks;
  int cached_tokens = 0;
  int state_slot = -1;
  TROUPE_FIELDS(kv_admission, admitted, blocks, cached_tokens, state_slot)
};

struct kv_usage {
  int total_blocks = 0;
  int used_blocks = 0;
  int cached_blocks = 0;  // held only by the prefix cache, reusable or evictable
  uint64_t prefix_queries = 0;
  uint64_t prefix_hits = 0;  // blocks found in the prefix cache
  TROUPE_FIELDS(kv_usage, total_blocks, used_blocks, cached_blocks, prefix_queries, prefix_hits)
};

struct engine_stats {
  int running = 0;
  int waiting = 0;
  uint64_t steps = 0;
  uint64_t preemptions = 0;
  uint64_t recoveries = 0;        // sequences re-prefilled after a stage failure
  uint64_t overlapped_steps = 0;  // begun while another was in the pipeline (micro-batches)
  kv_usage kv;
  TROUPE_FIELDS(engine_stats, running, waiting, steps, preemptions, recoveries, overlapped_steps, kv)
};

// node_agent -> head, once the head has joined: the node's name and the address of its
// transport (how other nodes reach its stages and expert groups).
struct node_description {
  std::string name;
  std::vector<uint8_t> transport_address;
  TROUPE_FIELDS(node_description, name, transport_address)
};

// health_monitor's view of one monitored actor.
struct component_health {
  std::string name;
  bool ready = false;
  double seconds_since_progress = 0.0;
  uint32_t restarts = 0;
  bool stuck = false;  // in one step longer than the progress timeout (then not ready)
  TROUPE_FIELDS(component_health, name, ready, seconds_since_progress, restarts, stuck)
};

}  // namespace troupe
