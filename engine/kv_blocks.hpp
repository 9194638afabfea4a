#pragma once
// kv_manager's bookkeeping: which KV blocks each sequence holds, and a prefix cache of
// full blocks keyed by a hash chained over every token before them, so a block is reused
// only when its whole prefix matches. Blocks nobody holds stay cached until evicted
// (least recently freed first).
//
// A model with linear-attention layers (Qwen3.5) also needs one recurrent-state slot per
// sequence, from `state_slots`. Its prefix cache is off: a cached block holds the full-
// attention layers' keys and values, but the linear layers' state after those tokens is
// kept nowhere, so a hit could not skip their computation.
#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

#include "engine/kv_messages.hpp"

namespace troupe {

class kv_blocks {
 public:
  kv_blocks(int num_blocks, int block_size, int state_slots = 0);

  kv_step_reply apply(const kv_step_request& request);
  // Forgets every sequence and cached block (their KV memory is gone).
  void reset();
  kv_usage usage() const;
  int block_size() const { return block_size_; }

 private:
  struct block {
    int refs = 0;
    uint64_t hash = 0;
    bool cached = false;  // registered in cache_ under `hash`
    std::list<int>::iterator lru;
  };
  struct sequence {
    std::vector<int> table;
    std::vector<int> pending;  // committed tokens of the block not yet full
    size_t full = 0;           // blocks whose every token is committed
    uint64_t chain = 0;        // hash of those blocks' tokens
    int state_slot = -1;
  };

  void release(request_id id);
  void commit(const kv_commit& c);
  bool grow(sequence& s, int positions);
  kv_admission admit(const kv_admit& a);
  int available() const { return int(free_.size() + evictable_.size()); }
  int take_block();
  void hold(int b);
  void drop(int b);

  int block_size_;
  int state_slots_;
  std::vector<int> free_slots_;
  std::vector<block> blocks_;
  std::vector<int> free_;     // hold nothing
  std::list<int> evictable_;  // cached, held by nobody; front is evicted first
  std::unordered_map<uint64_t, int> cache_;
  std::unordered_map<request_id, sequence> sequences_;
  uint64_t prefix_queries_ = 0, prefix_hits_ = 0;
};

}  // namespace troupe
