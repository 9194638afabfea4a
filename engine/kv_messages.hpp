#pragma once
// scheduler <-> kv_manager: one request per step carries every block operation of it.
#include <vector>

#include "engine/messages.hpp"

namespace troupe {

struct kv_admit {  // a new (or re-queued) sequence: look up its prefix, give it blocks
  request_id id = 0;
  std::vector<int> tokens;  // every token it will prefill
  TROUPE_FIELDS(kv_admit, id, tokens)
};

struct kv_grow {  // a running sequence must hold `positions` positions after this step
  request_id id = 0;
  int positions = 0;
  TROUPE_FIELDS(kv_grow, id, positions)
};

struct kv_commit {  // these tokens' keys and values are now computed: full blocks may be cached
  request_id id = 0;
  std::vector<int> tokens;
  TROUPE_FIELDS(kv_commit, id, tokens)
};

// Applied in this order: releases, commits, grows (oldest first), admissions (in order,
// stopping at the first that does not fit).
struct kv_step_request {
  std::vector<request_id> releases;
  std::vector<kv_commit> commits;
  std::vector<kv_grow> grows;
  std::vector<kv_admit> admits;
  TROUPE_FIELDS(kv_step_request, releases, commits, grows, admits)
};

struct kv_step_reply {
  std::vector<std::vector<int>> grown;   // per grow: the whole block table, empty if no room
  std::vector<kv_admission> admissions;  // per admit, up to the first refused
  TROUPE_FIELDS(kv_step_reply, grown, admissions)
};

}  // namespace troupe
