#include "transport/remote_experts.hpp"

#include <algorithm>
#include <atomic>
#include <string>

#include "transport/expert_wire.hpp"
#include "transport/tags.hpp"

namespace troupe {
namespace {

// Process-wide, so that stages running at once in one process never share a tag.
std::atomic<uint64_t> next_sequence{0};

std::chrono::milliseconds left_until(std::chrono::steady_clock::time_point deadline) {
  return std::max(std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()),
                  std::chrono::milliseconds(0));
}

std::string describe(const remote_experts::group& g, int layer) {
  const std::string range = "expert group [" + std::to_string(g.first_expert) + ", " + std::to_string(g.last_expert) +
                            ") of layer " + std::to_string(layer);
  return g.peer ? range + " on peer " + std::to_string(*g.peer) : range + " in this process";
}

}  // namespace

remote_experts::remote_experts(std::shared_ptr<transport> transport, std::shared_ptr<in_process_experts> local,
                               std::vector<group> groups, uint16_t node, int hidden_size,
                               std::chrono::milliseconds timeout)
    : transport_(std::move(transport)),
      local_(std::move(local)),
      groups_(std::move(groups)),
      node_(node),
      hidden_(hidden_size),
      timeout_(timeout) {
  for (const group& g : groups_) {
    TROUPE_CHECK(g.first_expert >= 0 && g.first_expert < g.last_expert, "an expert group's range is empty");
    TROUPE_CHECK(g.peer || local_, "a local expert group without this process's experts");
  }
  TROUPE_CHECK(!local_ || local_->hidden_size() == hidden_, "this process's experts have another hidden size");
}

status remote_experts::run(int layer, const float* x, int tokens, int k, const int* chosen, const float* weights,
                           float* out) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  const size_t size = size_t(tokens) * size_t(hidden_);

  // A group none of whose experts is chosen is skipped; the sum keeps its bits, since
  // that group's share is +0 everywhere (local_experts) and adding +0 changes no value a
  // sum of shares can hold (only -0, which it never holds).
  std::vector<bool> used(groups_.size(), false);
  for (int i = 0; i < tokens * k; ++i) {
    bool held = false;
    for (size_t g = 0; g < groups_.size(); ++g)
      if (chosen[i] >= groups_[g].first_expert && chosen[i] < groups_[g].last_expert) used[g] = held = true;
    if (!held)
      return error{"expert " + std::to_string(chosen[i]) + " of layer " + std::to_string(layer) +
                   " is in no expert group"};
  }
  const auto first_used = std::find(used.begin(), used.end(), true) - used.begin();
  if (size_t(first_used) == groups_.size()) {
    std::fill(out, out + size, 0.0f);
    return ok();
  }

  const dispatch_header header{layer, 0, 0, tokens, k, hidden_};
  std::vector<uint64_t> sequence(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (!used[g] || !groups_[g].peer) continue;
    sequence[g] = next_sequence.fetch_add(1);
    dispatch_header h = header;
    h.first_expert = groups_[g].first_expert;
    h.last_expert = groups_[g].last_expert;
    const auto bytes = encode_request(h, x, chosen, weights);
    const uint64_t tag = make_tag(channel::moe_dispatch, node_, sequence[g]);
    if (auto s = transport_->send(*groups_[g].peer, tag, bytes.data(), bytes.size(), left_until(deadline)); !s)
      return error{describe(groups_[g], layer) + ": " + s.err().message};
  }

  // The first group used writes out; every later one's share is added to it, in order.
  std::vector<std::vector<float>> shares(groups_.size());
  const auto share_of = [&](size_t g) {
    if (g == size_t(first_used)) return out;
    shares[g].resize(size);
    return shares[g].data();
  };
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (!used[g] || groups_[g].peer) continue;
    if (auto s = local_->run_group(groups_[g].first_expert, groups_[g].last_expert, layer, x, tokens, k, chosen,
                                   weights, share_of(g));
        !s)
      return error{describe(groups_[g], layer) + ": " + s.err().message};
  }
  for (size_t g = size_t(first_used); g < groups_.size(); ++g) {
    if (!used[g]) continue;
    if (groups_[g].peer) {
      const uint64_t tag = make_tag(channel::moe_combine, node_, sequence[g]);
      auto reply = transport_->receive_from(*groups_[g].peer, tag, channel_mask | sender_mask | sequence_mask,
                                            left_until(deadline));
      if (!reply) return error{describe(groups_[g], layer) + ": no reply: " + reply.err().message};
      if (auto s = decode_reply(reply->bytes, share_of(g), size); !s)
        return error{describe(groups_[g], layer) + ": " + s.err().message};
    }
    if (g != size_t(first_used))
      for (size_t i = 0; i < size; ++i) out[i] += shares[g][i];
  }
  return ok();
}

}  // namespace troupe
