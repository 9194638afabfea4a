#include "engine/batch_policy.hpp"

#include <algorithm>

namespace troupe {

batch_choice choose_batch(const batch_limits& limits, const std::vector<sequence_progress>& running,
                          const std::deque<request_id>& waiting) {
  batch_choice out;
  int slots = limits.max_num_seqs - int(running.size());
  const int active = int(running.size()) + std::min(int(waiting.size()), std::max(slots, 0));
  const int batches = std::max(1, limits.micro_batches);
  int share = std::max(1, (active + batches - 1) / batches);
  int budget = limits.max_num_batched_tokens;
  for (const sequence_progress& s : running) {
    const int count = std::min(s.known - s.computed, budget);
    if (s.in_step || count <= 0 || share <= 0) continue;
    budget -= count;
    --share;
    out.grows.push_back({s.id, s.computed + count});
  }
  for (request_id id : waiting) {
    if (slots-- <= 0 || budget <= 0 || share-- <= 0) break;
    out.admits.push_back(id);
  }
  out.budget_left = budget;
  return out;
}

int admitted_tokens(int known, int cached, int& budget_left) {
  const int count = std::min(known - cached, budget_left);
  budget_left -= count;
  return count;
}

}  // namespace troupe
