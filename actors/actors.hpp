#pragma once
// Every actor interface of troupe, with one comment per handler. The actors are described
// in docs/design.md; each lives in its own file pair under actors/.
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "actors/caf_fields.hpp"
#include "engine/kv_messages.hpp"
#include "engine/messages.hpp"
#include "gateway/http/http_request.hpp"
#include "gateway/http/http_responder.hpp"

namespace troupe {

// An HTTP request as the server thread hands it to the gateway actor (this process only).
// One dropped unanswered (its gateway died holding it, or before taking it) is answered
// 503 then, so no client waits on a request that nobody holds.
struct http_call {
  http_call(http::request r, std::shared_ptr<http::responder> p) : request(std::move(r)), responder(std::move(p)) {}
  http_call(const http_call&) = delete;
  http_call& operator=(const http_call&) = delete;
  ~http_call();

  http::request request;
  std::shared_ptr<http::responder> responder;
};
using http_call_ptr = std::shared_ptr<http_call>;

struct prepared_request;  // gateway/request_preparation.hpp: what a preparer makes of an http_call

}  // namespace troupe

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::http_call_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<troupe::prepared_request>)

namespace troupe {

using submit_atom = caf::atom_constant<caf::atom("submit")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using stats_atom = caf::atom_constant<caf::atom("stats")>;
using step_atom = caf::atom_constant<caf::atom("step")>;
using crash_atom = caf::atom_constant<caf::atom("crash")>;
using kv_step_atom = caf::atom_constant<caf::atom("kvstep")>;
using reset_atom = caf::atom_constant<caf::atom("reset")>;
using usage_atom = caf::atom_constant<caf::atom("usage")>;
using child_up_atom = caf::atom_constant<caf::atom("childup")>;
using ready_atom = caf::atom_constant<caf::atom("ready")>;
using progress_atom = caf::atom_constant<caf::atom("progress")>;
using restarted_atom = caf::atom_constant<caf::atom("restarted")>;
using health_atom = caf::atom_constant<caf::atom("health")>;
using expect_atom = caf::atom_constant<caf::atom("expect")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using http_atom = caf::atom_constant<caf::atom("http")>;
using closed_atom = caf::atom_constant<caf::atom("closed")>;
using next_stage_atom = caf::atom_constant<caf::atom("nextstage")>;
using handed_on_atom = caf::atom_constant<caf::atom("handedon")>;
using challenge_atom = caf::atom_constant<caf::atom("challenge")>;
using join_atom = caf::atom_constant<caf::atom("join")>;
using load_atom = caf::atom_constant<caf::atom("load")>;
using start_atom = caf::atom_constant<caf::atom("start")>;
using repoint_atom = caf::atom_constant<caf::atom("repoint")>;
using expert_group_atom = caf::atom_constant<caf::atom("expgroup")>;
using expert_join_atom = caf::atom_constant<caf::atom("expjoin")>;
using expert_step_atom = caf::atom_constant<caf::atom("expstep")>;
using hang_atom = caf::atom_constant<caf::atom("hang")>;
using busy_atom = caf::atom_constant<caf::atom("busy")>;
using stuck_atom = caf::atom_constant<caf::atom("stuck")>;
using subscribe_atom = caf::atom_constant<caf::atom("subscribe")>;
using warmed_atom = caf::atom_constant<caf::atom("warmed")>;
using add_replica_atom = caf::atom_constant<caf::atom("addrep")>;
using remove_replica_atom = caf::atom_constant<caf::atom("rmrep")>;
using forget_atom = caf::atom_constant<caf::atom("forget")>;
using prepare_atom = caf::atom_constant<caf::atom("prepare")>;
using grammar_atom = caf::atom_constant<caf::atom("grammar")>;
using rejoin_atom = caf::atom_constant<caf::atom("rejoin")>;

// A pipeline stage: a contiguous range of layers on one device, with their KV pool. A step
// enters at the first stage and each stage hands it on: the plan as a message, its
// activations over transport/; the last answers the scheduler's request (the others
// delegate it) with the sampled tokens.
using stage_actor = caf::typed_actor<
    // The first stage runs one step from the plan's tokens.
    caf::replies_to<step_atom, step_plan>::with<step_result>,
    // A later stage runs one step from the previous stage's residual rows, which come over
    // its transport tagged (residual, the previous stage's index, the step).
    caf::replies_to<step_atom, step_plan, handed_on_atom>::with<step_result>,
    // Where a stage other than the last hands its steps on, from now on (the scheduler
    // sends it whenever either end (re)starts).
    caf::reacts_to<next_stage_atom, caf::actor>,
    // Where the replica's expert group G runs, from now on (the scheduler sends it whenever
    // the group or the stage (re)starts; a null actor while the group is down): a GPU stage
    // reaches the groups on other GPUs there.
    caf::reacts_to<expert_group_atom, int, caf::actor>,
    // Fails the way a crash would (chaos drills and tests).
    caf::reacts_to<crash_atom>,
    // Blocks its next step this many milliseconds, as a hung device or a collective that
    // does not return would (chaos drills and tests).
    caf::reacts_to<hang_atom, int>,
    // Readies a constrained sequence's grammar before the scheduler admits it, beside the
    // steps (the last stage's grammar_warmer): true once it is, false where it was not
    // (another stage, or it does not compile); the scheduler admits the sequence either way.
    caf::replies_to<grammar_atom, grammar>::with<bool>>;

// The last stage's grammar warmer (actors/grammar_warmer.hpp): compiles the grammar into the
// engine's cache and gathers its first mask's token classes; false if it does not compile.
using grammar_warmer_actor = caf::typed_actor<caf::replies_to<grammar_atom, grammar>::with<bool>>;

// Pipeline stage k's name: what supervisors, health reports and crash drills call it.
inline std::string stage_name(int k) { return "stage_" + std::to_string(k); }
inline std::string expert_group_name(int g) { return "expert_group_" + std::to_string(g); }

// The experts of a set of layers on one device; stages reach them through transport/.
using expert_group_actor = caf::typed_actor<
    // A GPU stage of another process made a new NCCL communicator with the groups it
    // reaches: the group joins it (replacing its earlier one with that stage).
    caf::reacts_to<expert_join_atom, expert_session>,
    // That stage's next step comes over the communicator: the group serves its part.
    caf::reacts_to<expert_step_atom, expert_step>,
    // Fails the way a crash would (chaos drills and tests).
    caf::reacts_to<crash_atom>>;

// Paged KV blocks, prefix cache, admission.
using kv_manager_actor = caf::typed_actor<
    // Applies one step's block operations.
    caf::replies_to<kv_step_atom, kv_step_request>::with<kv_step_reply>,
    // Forgets every block: the KV memory they described is gone (a stage restarted).
    caf::reacts_to<reset_atom>,
    // Block usage and prefix-cache figures.
    caf::replies_to<usage_atom>::with<kv_usage>>;

// The request queue and continuous batching: one step plan per iteration.
using scheduler_actor = caf::typed_actor<
    // Queues a request; token_event messages go to the given actor until it finishes.
    caf::reacts_to<submit_atom, generation_request, caf::actor>,
    // Stops a request (client gone, stop string seen); frees its blocks at once.
    caf::reacts_to<cancel_atom, request_id>,
    // Queue and batch figures.
    caf::replies_to<stats_atom>::with<engine_stats>,
    // A supervised child (re)started; a stage's handle replaces its predecessor's (whose KV
    // memory is gone) in the pipeline.
    caf::reacts_to<child_up_atom, std::string, caf::actor>,
    // Tries to run a step (after a failed step's back-off).
    caf::reacts_to<tick_atom>>;

// Heartbeats and progress of the components; the gateway's /health asks it.
using health_monitor_actor = caf::typed_actor<
    // A component that must report ready before the service is healthy. The sender (its
    // supervisor) is told `stuck_atom, name` whenever the component is declared stuck.
    caf::reacts_to<expect_atom, std::string>,
    // The component finished loading and can work.
    caf::reacts_to<ready_atom, std::string>,
    // The component began a step (true), or ended one that failed (false). A step in
    // flight longer than the progress timeout makes it stuck: not ready.
    caf::reacts_to<busy_atom, std::string, bool>,
    // The component finished a unit of work (a step): it is alive and moving.
    caf::reacts_to<progress_atom, std::string>,
    // The component's supervisor restarted it: not ready until it says so again.
    caf::reacts_to<restarted_atom, std::string>,
    // The actor is told `stuck_atom, name` of every component declared stuck from now on.
    caf::reacts_to<subscribe_atom, caf::actor>,
    // Looks for components stuck in a step (its own timer).
    caf::reacts_to<tick_atom>,
    // Forgets every component whose name begins with this (a replica that was removed).
    caf::reacts_to<forget_atom, std::string>,
    // Every expected component's state.
    caf::replies_to<health_atom>::with<std::vector<component_health>>>;

// The OpenAI HTTP API: parses requests at the edge, tokenizes, renders chat templates,
// and streams the scheduler's tokens back as JSON or SSE.
using gateway_actor = caf::typed_actor<
    // A request from the HTTP server thread.
    caf::reacts_to<http_atom, http_call_ptr>,
    // New tokens (or the end) of a request the gateway submitted.
    caf::reacts_to<token_event>,
    // The client of an HTTP call went away: its requests are cancelled.
    caf::reacts_to<closed_atom, uint64_t>,
    // Asks the health monitor which replicas can take requests (every second), and starts
    // the warm-up once one can.
    caf::reacts_to<tick_atom>,
    // One warm-up request ended, with its HTTP status and (when it failed) its response.
    caf::reacts_to<warmed_atom, int, std::string>,
    // The gateway hang drill: its thread blocks this many ms, as a stuck handler would.
    caf::reacts_to<hang_atom, int>>;

// One per node process of a cluster: runs the node's part of cluster.conf (its pipeline
// stages and expert groups, under a supervisor of its own) for the head, the process that
// runs the gateway. Everything but challenge and join needs a joined head.
using node_agent_actor = caf::typed_actor<
    // A fresh nonce for the head's proof of the cluster secret.
    caf::replies_to<challenge_atom>::with<std::vector<uint8_t>>,
    // The head's proof (cluster/join_proof.hpp) over the last nonce it was given: the
    // node's description, or an error for a wrong secret.
    caf::replies_to<join_atom, std::vector<uint8_t>>::with<node_description>,
    // Loads the model for the node's stages and expert groups: the KV blocks each of its
    // stages holds (0 when it has no stage).
    caf::replies_to<load_atom>::with<int>,
    // Every node's transport address, in cluster.conf's order (empty for a node that is down:
    // its address comes by repoint when it is back), the head's scheduler of each
    // replica (in the file's order; a null one for a replica that is not running) and its
    // health monitor: the node links to its peers and starts its stages and expert groups
    // of the running replicas, which report to them. The answer: how many it started.
    caf::replies_to<start_atom, std::vector<std::vector<uint8_t>>, std::vector<scheduler_actor>,
                    health_monitor_actor>::with<int>,
    // Node N's process was started again at a new transport address: this node's link to
    // it moves there (the peer keeps its id). The answer: N's peer id.
    caf::replies_to<repoint_atom, int, std::vector<uint8_t>>::with<int>,
    // The hang drill: every stage of this node blocks its next step this many milliseconds.
    caf::reacts_to<hang_atom, int>,
    // Replica R (its index in the file) was added at runtime with this scheduler: the node
    // starts its stages and expert groups of R. The answer: how many (0 when it has none).
    caf::replies_to<add_replica_atom, int, scheduler_actor, health_monitor_actor>::with<int>,
    // Replica R is being removed: the node stops its stages and expert groups of R and
    // answers, once they have ended, how many there were.
    caf::replies_to<remove_replica_atom, int>::with<int>>;

// One of the gateway's preparer threads: it parses, renders and tokenizes the requests
// whose cost grows with their size, so that the gateway actor does not.
using request_preparer_actor = caf::typed_actor<
    // The request to an endpoint of gateway/request_preparation.hpp, prepared for the engine
    // (or answered: an error, /tokenize's ids).
    caf::replies_to<prepare_atom, http_call_ptr>::with<std::shared_ptr<prepared_request>>>;

// The head's control of a cluster's replicas at runtime, for the gateway: it blocks on the
// nodes, so it runs detached.
using replica_control_actor = caf::typed_actor<
    // Starts replica R of cluster.conf (a scheduler here, its stages and expert groups on
    // their nodes) and answers its scheduler once every part is ready; on an error nothing
    // of R is left running.
    caf::replies_to<add_replica_atom, int>::with<scheduler_actor>,
    // Stops replica R, which runs no request any more: its stages, expert groups and
    // scheduler end, and the health monitor forgets them. The answer: the parts stopped.
    caf::replies_to<remove_replica_atom, int>::with<int>>;

// The head of a running cluster: it owns it, and every change to it is one of its
// messages, taken one at a time. Besides the replicas' control, the rejoin of node N
// (cluster.conf's order) whose process was started again, with its new agent; the answer
// once its parts are back.
using cluster_head_actor =
    replica_control_actor::extend<caf::replies_to<rejoin_atom, int, node_agent_actor>::with<bool>>;

}  // namespace troupe
