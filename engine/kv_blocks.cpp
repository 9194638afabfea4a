#include "engine/kv_blocks.hpp"

#include <algorithm>

#include "base/check.hpp"

namespace troupe {
namespace {

uint64_t chain_hash(uint64_t prev, const int* tokens, int n) {  // FNV-1a over the ids, seeded by prev
  uint64_t h = prev ^ 0xcbf29ce484222325ull;
  for (int i = 0; i < n; ++i) {
    h ^= uint32_t(tokens[i]);
    h *= 0x100000001b3ull;
  }
  return h ? h : 1;
}

}  // namespace

kv_blocks::kv_blocks(int num_blocks, int block_size, int state_slots)
    : block_size_(block_size), state_slots_(state_slots), blocks_(static_cast<size_t>(num_blocks)) {
  reset();
}

void kv_blocks::reset() {
  std::fill(blocks_.begin(), blocks_.end(), block{});
  free_.resize(blocks_.size());
  for (size_t i = 0; i < free_.size(); ++i) free_[i] = int(free_.size() - 1 - i);  // hand out 0 first
  evictable_.clear();
  cache_.clear();
  sequences_.clear();
  free_slots_.resize(size_t(state_slots_));
  for (int i = 0; i < state_slots_; ++i) free_slots_[size_t(i)] = state_slots_ - 1 - i;  // hand out 0 first
}

int kv_blocks::take_block() {
  int b;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else {
    TROUPE_CHECK(!evictable_.empty(), "no KV block to take");
    b = evictable_.front();
    evictable_.pop_front();
    cache_.erase(blocks_[size_t(b)].hash);
    blocks_[size_t(b)] = block{};
  }
  blocks_[size_t(b)].refs = 1;
  return b;
}

void kv_blocks::hold(int b) {
  block& k = blocks_[size_t(b)];
  if (k.refs++ == 0 && k.cached) evictable_.erase(k.lru);
}

void kv_blocks::drop(int b) {
  block& k = blocks_[size_t(b)];
  TROUPE_CHECK(k.refs > 0, "KV block released twice");
  if (--k.refs > 0) return;
  if (k.cached)
    k.lru = evictable_.insert(evictable_.end(), b);
  else
    free_.push_back(b);
}

void kv_blocks::release(request_id id) {
  auto it = sequences_.find(id);
  if (it == sequences_.end()) return;
  for (int b : it->second.table) drop(b);
  if (it->second.state_slot >= 0) free_slots_.push_back(it->second.state_slot);
  sequences_.erase(it);
}

void kv_blocks::commit(const kv_commit& c) {
  auto it = sequences_.find(c.id);
  if (it == sequences_.end()) return;
  sequence& s = it->second;
  for (int token : c.tokens) {
    s.pending.push_back(token);
    if (int(s.pending.size()) < block_size_) continue;
    s.chain = chain_hash(s.chain, s.pending.data(), block_size_);
    s.pending.clear();
    TROUPE_CHECK(s.full < s.table.size(), "committed tokens beyond the sequence's blocks");
    const int b = s.table[s.full++];
    block& k = blocks_[size_t(b)];
    // A block already cached under another block (same prefix computed twice) stays private.
    if (state_slots_ == 0 && !k.cached && !cache_.count(s.chain)) {
      k.cached = true;
      k.hash = s.chain;
      cache_[s.chain] = b;
    }
  }
}

bool kv_blocks::grow(sequence& s, int positions) {
  const int needed = (positions + block_size_ - 1) / block_size_ - int(s.table.size());
  if (needed <= 0) return true;
  if (needed > available()) return false;
  for (int i = 0; i < needed; ++i) s.table.push_back(take_block());
  return true;
}

kv_admission kv_blocks::admit(const kv_admit& a) {
  const int n = int(a.tokens.size());
  // Reuse full blocks of the prefix, but leave at least one token to compute: the step
  // needs it to produce logits.
  std::vector<int> matched;
  uint64_t chain = 0;
  const int reusable = state_slots_ > 0 ? 0 : std::max(0, (n - 1) / block_size_);
  for (int i = 0; i < reusable; ++i) {
    ++prefix_queries_;
    const uint64_t h = chain_hash(chain, a.tokens.data() + i * block_size_, block_size_);
    auto hit = cache_.find(h);
    if (hit == cache_.end()) break;
    ++prefix_hits_;
    matched.push_back(hit->second);
    chain = h;
  }
  const int needed = (n + block_size_ - 1) / block_size_ - int(matched.size());
  // Matched blocks that sit in the evictable list are not free to take for the rest.
  int matched_evictable = 0;
  for (int b : matched) matched_evictable += blocks_[size_t(b)].refs == 0;
  if (needed > available() - matched_evictable) return {};
  if (state_slots_ > 0 && free_slots_.empty()) return {};
  sequence s;
  if (state_slots_ > 0) {
    s.state_slot = free_slots_.back();
    free_slots_.pop_back();
  }
  for (int b : matched) hold(b);
  s.table = matched;
  s.full = matched.size();
  s.chain = chain;
  for (int i = 0; i < needed; ++i) s.table.push_back(take_block());
  kv_admission out{true, s.table, int(matched.size()) * block_size_, s.state_slot};
  sequences_[a.id] = std::move(s);
  return out;
}

kv_step_reply kv_blocks::apply(const kv_step_request& r) {
  kv_step_reply reply;
  for (request_id id : r.releases) release(id);
  for (const auto& c : r.commits) commit(c);
  for (const auto& g : r.grows) {
    auto it = sequences_.find(g.id);
    const bool ok = it != sequences_.end() && grow(it->second, g.positions);
    reply.grown.push_back(ok ? it->second.table : std::vector<int>{});
  }
  for (const auto& a : r.admits) {
    TROUPE_CHECK(!sequences_.count(a.id), "sequence admitted twice");
    kv_admission adm = admit(a);
    reply.admissions.push_back(adm);
    if (!adm.admitted) break;
  }
  return reply;
}

kv_usage kv_blocks::usage() const {
  const int total = int(blocks_.size());
  return {total, total - available(), int(evictable_.size()), prefix_queries_, prefix_hits_};
}

}  // namespace troupe
