#pragma once
// A cluster node's agent: the one actor a node process publishes on its control port. The
// head (the process that runs the gateway) proves the cluster secret, has it load the
// model, then starts the node's part of cluster.conf: its pipeline stages and expert
// groups of every replica, each replica's under a supervisor of the node's own and named
// "REPLICA/stage_K" and "REPLICA/expert_group_G", linked to the other nodes over the node's
// transport. On a GPU node each stage serves its own layers' experts from the node's GPU
// (node_backend). A replica added or removed at runtime has its part here started or
// stopped alone. When a running replica's scheduler goes away (the head stopped, or the
// link to it broke past the connection timeout) the agent stops its actors and ends.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "actors/actors.hpp"
#include "actors/supervisor.hpp"
#include "cluster/cluster_spec.hpp"
#include "engine/node_backend.hpp"
#include "text/grammar/token_vocabulary.hpp"
#include "transport/expert_server.hpp"
#include "transport/transport.hpp"

namespace troupe {

struct node_agent_options {
  cluster_spec spec;  // the cluster's whole file, as this process read it
  int node = 0;       // this node's index in spec.nodes: its sender id on the transport
  backend_options backend;
  restart_policy restarts;
  std::shared_ptr<transport> link;  // this process's transport to the other nodes
  // The tokenizer's, for constrained decoding at a last stage; null or not valid(): none.
  pending_vocabulary vocabulary;
};

struct node_agent_state {
  static inline const char* name = "node_agent";
  node_agent_options options;
  std::map<caf::node_id, std::vector<uint8_t>> nonces;  // the last one handed to each process
  std::set<caf::node_id> joined;
  std::optional<node_backend> backend;
  std::vector<int> peers;  // every node's peer id on the link, by index
  std::unique_ptr<expert_server> server;
  bool started = false;
  // The head's scheduler of each replica, null while the replica is not running: when a
  // running one goes, the head has gone.
  std::vector<scheduler_actor> schedulers;
  std::vector<caf::actor> supervisors;                     // by replica: of its part here, null when none
  std::vector<int> parts;                                  // by replica: its stages and expert groups here
  std::vector<std::pair<caf::actor, std::string>> stages;  // each stage here, with its supervisor
  // Removals waiting for a supervisor to end: the answer, with how many parts it ran.
  std::map<caf::actor_addr, std::pair<caf::typed_response_promise<int>, int>> stopping;
};

node_agent_actor::behavior_type node_agent(node_agent_actor::stateful_pointer<node_agent_state> self,
                                           node_agent_options options);

// Backend options from the file's [model] and [engine].
backend_options backend_options_of(const cluster_spec& spec);

}  // namespace troupe
