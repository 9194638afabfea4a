#include "model/sampler.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <vector>

#include "base/check.hpp"
#include "kernels/cpu/log_softmax.hpp"

namespace troupe {
namespace {

// The allowed tokens below vocab, in id order, and their scores: the rule then runs over
// them alone. Compacting keeps the id order, so "ties to the lower index" stays "ties
// to the lower id", and a step that allows few tokens samples from few.
struct candidates {
  std::vector<int> ids;
  std::vector<float> scores;
};

candidates allowed_candidates(const float* scores, int vocab, const std::vector<uint64_t>& allowed) {
  candidates c;
  const size_t words = std::min(allowed.size(), size_t(vocab + 63) / 64);
  for (size_t w = 0; w < words; ++w)
    for (uint64_t bits = allowed[w]; bits != 0; bits &= bits - 1) {
      const int t = int(w * 64) + std::countr_zero(bits);
      if (t >= vocab) break;
      c.ids.push_back(t);
      c.scores.push_back(scores[t]);
    }
  TROUPE_CHECK(!c.ids.empty(), "a constrained sampling step allows no token");
  return c;
}

// vLLM's order: logit_bias, then the repetition penalty on every seen token, then OpenAI's
// frequency and presence penalties on generated ones. The explicit fma rounds as the GPU
// sampler does.
void apply_penalties(std::vector<float>& logits, const sampling_params& p, const token_history& h) {
  for (const token_bias& b : p.logit_bias) logits[size_t(b.token)] += b.bias;
  if (p.repetition_penalty != 1.0f)
    for (const auto& [token, count] : h.seen()) {
      float& l = logits[size_t(token)];
      l = l > 0 ? l / p.repetition_penalty : l * p.repetition_penalty;
    }
  if (p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f)
    for (const auto& [token, count] : h.generated())
      logits[size_t(token)] -= std::fma(p.frequency_penalty, float(count), p.presence_penalty);
}

// a ranks before b: higher probability, ties to the lower id.
bool ranks_before(const std::vector<double>& probs, int a, int b) {
  return probs[size_t(a)] > probs[size_t(b)] || (probs[size_t(a)] == probs[size_t(b)] && a < b);
}

// The last token top-k and top-p keep, in rank order; -1 when they keep every token.
int rank_cut(const std::vector<double>& probs, const sampling_params& p) {
  const size_t vocab = probs.size();
  size_t keep = p.top_k > 0 ? std::min<size_t>(size_t(p.top_k), vocab) : vocab;
  if (keep == vocab && p.top_p >= 1.0f) return -1;
  std::vector<int> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  auto by_rank = [&](int a, int b) { return ranks_before(probs, a, b); };
  // Most of the mass sits in few tokens: rank a head first and the rest only if needed.
  const size_t head = std::min<size_t>(keep, 1024);
  std::partial_sort(order.begin(), order.begin() + long(head), order.end(), by_rank);
  double head_mass = 0;
  for (size_t i = 0; i < head; ++i) head_mass += probs[size_t(order[i])];
  if (head < keep && (p.top_p >= 1.0f || head_mass < p.top_p))
    std::partial_sort(order.begin() + long(head), order.begin() + long(keep), order.end(), by_rank);
  if (p.top_p < 1.0f) {
    double mass = 0;
    size_t i = 0;
    while (i < keep && mass < p.top_p) mass += probs[size_t(order[i++])];
    keep = std::max<size_t>(i, 1);
  }
  return order[keep - 1];
}

int draw(const float* scores, int vocab, const sampling_params& p, double u) {
  const float max_logit = *std::max_element(scores, scores + vocab);
  std::vector<double> probs(static_cast<size_t>(vocab));
  double total = 0;
  for (int i = 0; i < vocab; ++i) total += probs[size_t(i)] = std::exp(double(scores[i] - max_logit) / p.temperature);
  for (double& q : probs) q /= total;
  const int cut = rank_cut(probs, p);
  // min(min_p, 1) keeps the top token whatever min_p says.
  const double floor = p.min_p > 0.0f ? std::min(p.min_p, 1.0f) * *std::max_element(probs.begin(), probs.end()) : 0.0;
  auto kept = [&](int t) { return (cut < 0 || !ranks_before(probs, cut, t)) && probs[size_t(t)] >= floor; };
  double mass = 0;
  for (int t = 0; t < vocab; ++t)
    if (kept(t)) mass += probs[size_t(t)];
  const double target = u * mass;
  double cumulative = 0;
  int chosen = 0;
  for (int t = 0; t < vocab; ++t)
    if (kept(t)) {
      chosen = t;
      if ((cumulative += probs[size_t(t)]) > target) break;
    }
  return chosen;
}

}  // namespace

sampled_token sample(const float* logits, int vocab, const sampling_params& p, const token_history& history,
                     int position, const std::vector<uint64_t>* allowed) {
  return sample_with_uniform(logits, vocab, p, history, sampling_uniform(p.seed, position), allowed);
}

sampled_token sample_with_uniform(const float* logits, int vocab, const sampling_params& p,
                                  const token_history& history, double u, const std::vector<uint64_t>* allowed) {
  const bool penalised = p.repetition_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f ||
                         !p.logit_bias.empty();
  std::vector<float> adjusted;
  if (penalised) {
    adjusted.assign(logits, logits + vocab);
    apply_penalties(adjusted, p, history);
  }
  const float* scores = penalised ? adjusted.data() : logits;
  auto pick = [&](const float* s, int n) {
    return p.temperature <= 0.0f ? int(std::max_element(s, s + n) - s) : draw(s, n, p, u);
  };
  int chosen;
  if (allowed) {
    const candidates c = allowed_candidates(scores, vocab, *allowed);
    chosen = c.ids[size_t(pick(c.scores.data(), int(c.ids.size())))];
  } else {
    chosen = pick(scores, vocab);
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
