#include "model/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kernels/cpu/log_softmax.hpp"

namespace troupe {
namespace {

double uniform(uint64_t seed, int position) {  // splitmix64 of (seed, position), in [0, 1)
  uint64_t x = seed ^ (uint64_t(uint32_t(position)) * 0x9e3779b97f4a7c15ull);
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return double(x >> 11) / double(1ull << 53);
}

// vLLM's order: repetition penalty on every seen token, then OpenAI's frequency and
// presence penalties on generated ones.
void apply_penalties(std::vector<float>& logits, const sampling_params& p, const token_history& h) {
  if (p.repetition_penalty != 1.0f)
    for (const auto& [token, count] : h.seen()) {
      float& l = logits[size_t(token)];
      l = l > 0 ? l / p.repetition_penalty : l * p.repetition_penalty;
    }
  if (p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f)
    for (const auto& [token, count] : h.generated())
      logits[size_t(token)] -= p.frequency_penalty * float(count) + p.presence_penalty;
}

// Candidates by descending probability, after top-k, top-p and min-p; probs sum to 1.
void filter(std::vector<int>& order, std::vector<double>& probs, const sampling_params& p) {
  const size_t vocab = probs.size();
  size_t keep = p.top_k > 0 ? std::min<size_t>(size_t(p.top_k), vocab) : vocab;
  auto by_prob = [&](int a, int b) { return probs[size_t(a)] > probs[size_t(b)] || (probs[size_t(a)] == probs[size_t(b)] && a < b); };
  // Most of the mass sits in few tokens: sort a head first and the rest only if needed.
  const size_t head = std::min<size_t>(keep, 1024);
  std::partial_sort(order.begin(), order.begin() + long(head), order.end(), by_prob);
  double head_mass = 0;
  for (size_t i = 0; i < head; ++i) head_mass += probs[size_t(order[i])];
  if (head < keep && (p.top_p >= 1.0f || head_mass < p.top_p)) std::sort(order.begin() + long(head), order.begin() + long(keep), by_prob);
  if (p.top_p < 1.0f) {
    double mass = 0;
    size_t i = 0;
    while (i < keep && mass < p.top_p) mass += probs[size_t(order[i++])];
    keep = std::max<size_t>(i, 1);
  }
  if (p.min_p > 0.0f) {
    const double floor = p.min_p * probs[size_t(order[0])];
    size_t i = 1;
    while (i < keep && probs[size_t(order[i])] >= floor) ++i;
    keep = i;
  }
  order.resize(keep);
}

}  // namespace

sampled_token sample(const float* logits, int vocab, const sampling_params& p,
                     const token_history& history, int position) {
  const bool penalised = p.repetition_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f;
  std::vector<float> adjusted;
  if (penalised) {
    adjusted.assign(logits, logits + vocab);
    apply_penalties(adjusted, p, history);
  }
  const float* scores = penalised ? adjusted.data() : logits;
  int chosen = 0;
  if (p.temperature <= 0.0f) {
    chosen = int(std::max_element(scores, scores + vocab) - scores);
  } else {
    const float max_logit = *std::max_element(scores, scores + vocab);
    std::vector<double> probs(static_cast<size_t>(vocab));
    double total = 0;
    for (int i = 0; i < vocab; ++i) total += probs[size_t(i)] = std::exp(double(scores[i] - max_logit) / p.temperature);
    for (double& q : probs) q /= total;
    std::vector<int> order(static_cast<size_t>(vocab));
    std::iota(order.begin(), order.end(), 0);
    if (p.top_k > 0 || p.top_p < 1.0f || p.min_p > 0.0f) filter(order, probs, p);
    double kept = 0;
    for (int t : order) kept += probs[size_t(t)];
    const double target = uniform(p.seed, position) * kept;
    double cumulative = 0;
    chosen = order.back();
    for (int t : order)
      if ((cumulative += probs[size_t(t)]) > target) {
        chosen = t;
        break;
      }
  }

  sampled_token out{chosen, 0.0f, {}};
  if (p.top_logprobs < 0) return out;  // a full log-softmax per token costs more than the rest
  std::vector<float> logprobs(static_cast<size_t>(vocab));
  cpu::log_softmax(logits, vocab, logprobs.data());
  out.logprob = logprobs[size_t(chosen)];
  if (p.top_logprobs > 0) {
    std::vector<int> top(static_cast<size_t>(vocab));
    std::iota(top.begin(), top.end(), 0);
    const size_t n = std::min<size_t>(size_t(p.top_logprobs), size_t(vocab));
    std::partial_sort(top.begin(), top.begin() + long(n), top.end(), [&](int a, int b) {
      return logprobs[size_t(a)] > logprobs[size_t(b)] || (logprobs[size_t(a)] == logprobs[size_t(b)] && a < b);
    });
    for (size_t i = 0; i < n; ++i) out.top.push_back({top[i], logprobs[size_t(top[i])]});
  }
  return out;
}

}  // namespace troupe
