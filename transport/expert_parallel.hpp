#pragma once
// Expert parallelism across GPUs: a GPU stage runs the experts of its own process's
// expert group in place and reaches every other group of its replica on another GPU
// through one NCCL communicator of its own (rank 0 the stage, ranks 1.. the processes of
// those groups: cluster/expert_ranks.hpp). Per MoE layer the stage sends each of them its
// tokens (their normed rows, chosen experts and routing weights), computes its own
// experts' rows meanwhile, receives each group's rows of the pairs it serves, and sums
// every token's pairs in routing order (nccl_experts, nccl_expert_server).
//
// Here: the control messages that set this up over CAF (a communicator to join, a step to
// serve), how a stage's link reaches its peers (expert_peers, implemented by the actors),
// what serves a group to stages elsewhere (remote_expert_server), and the bytes of one
// layer's transfers, which both ends take from one place.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/fields.hpp"
#include "base/result.hpp"

namespace troupe {

// stage -> expert group: join the stage's new communicator, as `rank` of `ranks`, which
// replaces the group's earlier one for that stage (whose session ended).
struct expert_session {
  int stage = 0;            // the stage's index in its replica's pipeline
  uint64_t session = 0;     // names the communicator in expert_step
  std::vector<uint8_t> id;  // its ncclUniqueId's bytes
  int rank = 0;
  int ranks = 0;
  TROUPE_FIELDS(expert_session, stage, session, id, rank, ranks)
};

// stage -> expert group, before each step: the step's transfers, `tokens` rows a MoE layer
// of layers [first_layer, last_layer), come over session `session`.
struct expert_step {
  int stage = 0;
  uint64_t session = 0;
  int tokens = 0;
  int first_layer = 0;
  int last_layer = 0;
  TROUPE_FIELDS(expert_step, stage, session, tokens, first_layer, last_layer)
};

// One MoE layer's transfers for `tokens` rows of a model with `hidden` and top-`k` routing,
// in the order both ends enqueue them: the stage sends every peer the tokens' normed rows
// (bf16), chosen expert ids (int32) and routing weights (fp32), then takes from each peer
// the fp32 rows [tokens * k, hidden] of the pairs it serves (the other rows unused).
struct expert_layer_bytes {
  size_t rows = 0, chosen = 0, weights = 0;  // stage -> peer
  size_t pair_rows = 0;                      // peer -> stage
};
expert_layer_bytes expert_layer_transfers(int tokens, int hidden, int k);

// How a GPU stage's link reaches the expert groups it has on other GPUs: the control plane
// (actors/expert_peer_handles). Used from the stage's thread only.
class expert_peers {
 public:
  virtual ~expert_peers() = default;
  // Changes whenever a peer's group is replaced (restarted): a communicator joined before
  // has lost that rank.
  virtual uint64_t generation() const = 0;
  // The peers whose group is not known (down, or not started yet); empty when all are.
  virtual std::string missing() const = 0;
  // Asks the peer of `session.rank` to join `session` (no answer: joining tells).
  virtual void invite(const expert_session& session) = 0;
  // Tells every peer the step that comes over their communicator.
  virtual void announce(const expert_step& step) = 0;
};

// Serves an expert group's experts to GPU stages of other processes (nccl_expert_server),
// one call at a time, from the group's thread.
class remote_expert_server {
 public:
  virtual ~remote_expert_server() = default;
  // Joins the stage's new communicator (dropping its previous one): returns once every
  // rank has joined, or with an error after the join timeout.
  virtual status join(const expert_session& session) = 0;
  // Runs this group's part of the step and waits for it: an error when the stage's
  // transfers do not come within the wait timeout (the communicator is then dropped).
  virtual status serve(const expert_step& step) = 0;
};

}  // namespace troupe
