#include "kernels/cpu/gated_delta_rule.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace troupe::cpu {
namespace {

// q and k of every (token, key head), L2-normalised; q also scaled by 1/sqrt(key_dim).
struct normalised_qk {
  std::vector<float> q, k;
};

normalised_qk normalise(const float* q, const float* k, const delta_rule_shape& s) {
  const int64_t rows = int64_t(s.tokens) * s.key_heads, d = s.key_dim;
  normalised_qk n{std::vector<float>(q, q + rows * d), std::vector<float>(k, k + rows * d)};
  const float q_scale = 1.0f / std::sqrt(float(d));
  for (auto [x, extra] : {std::pair{n.q.data(), q_scale}, std::pair{n.k.data(), 1.0f}})
    for (int64_t r = 0; r < rows; ++r) {
      float* row = x + r * d;
      float sum = 0.0f;
      for (int64_t i = 0; i < d; ++i) sum += row[i] * row[i];
      const float scale = 1.0f / std::sqrt(sum + 1e-6f);
      for (int64_t i = 0; i < d; ++i) row[i] = row[i] * scale * extra;
    }
  return n;
}

float dot(const float* a, const float* b, int n) {
  float s = 0.0f;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

void gated_delta_rule_recurrent(const float* q, const float* k, const float* v, const float* g, const float* beta,
                                const delta_rule_shape& s, float* state, float* out) {
  const auto n = normalise(q, k, s);
  const int group = s.value_heads / s.key_heads, dk = s.key_dim, dv = s.value_dim;
#pragma omp parallel for schedule(static) if (int64_t(s.tokens) * s.value_heads * dk * dv > 65536)
  for (int h = 0; h < s.value_heads; ++h) {
    float* S = state + int64_t(h) * dk * dv;
    std::vector<float> delta(static_cast<size_t>(dv));
    for (int t = 0; t < s.tokens; ++t) {
      const int64_t kv_row = int64_t(t) * s.key_heads + h / group, vh = int64_t(t) * s.value_heads + h;
      const float* qt = n.q.data() + kv_row * dk;
      const float* kt = n.k.data() + kv_row * dk;
      const float* vt = v + vh * dv;
      const float decay = std::exp(g[vh]);
      for (int64_t i = 0; i < int64_t(dk) * dv; ++i) S[i] *= decay;
      // delta = beta (v - S^T k): the part of v the state does not predict yet.
      std::copy(vt, vt + dv, delta.begin());
      for (int i = 0; i < dk; ++i)
        for (int j = 0; j < dv; ++j) delta[size_t(j)] -= S[int64_t(i) * dv + j] * kt[i];
      for (int j = 0; j < dv; ++j) delta[size_t(j)] *= beta[vh];
      float* o = out + vh * dv;
      std::fill(o, o + dv, 0.0f);
      for (int i = 0; i < dk; ++i) {
        float* Si = S + int64_t(i) * dv;
        for (int j = 0; j < dv; ++j) {
          Si[j] += kt[i] * delta[size_t(j)];
          o[j] += Si[j] * qt[i];
        }
      }
    }
  }
}

// Within a chunk starting from state S0, with gamma_t the cumulative log decay from the
// chunk's start, the state after token t is
//   S_t = exp(gamma_t) S0 + sum_{s<=t} exp(gamma_t - gamma_s) k_s u_s^T,
// where the corrections u solve the unit lower-triangular system
//   u_t + sum_{s<t} beta_t exp(gamma_t - gamma_s) (k_t . k_s) u_s = beta_t (v_t - exp(gamma_t) S0^T k_t).
// Decays enter only as exp of differences that are <= 0, so nothing overflows.
void gated_delta_rule_chunked(const float* q, const float* k, const float* v, const float* g, const float* beta,
                              const delta_rule_shape& s, int chunk, float* state, float* out) {
  const auto n = normalise(q, k, s);
  const int group = s.value_heads / s.key_heads, dk = s.key_dim, dv = s.value_dim;
#pragma omp parallel for schedule(static) if (int64_t(s.tokens) * s.value_heads * dk * dv > 65536)
  for (int h = 0; h < s.value_heads; ++h) {
    float* S = state + int64_t(h) * dk * dv;
    std::vector<float> gamma(static_cast<size_t>(chunk)), u(static_cast<size_t>(chunk) * size_t(dv));
    std::vector<float> decayed(static_cast<size_t>(dk) * size_t(dv));
    for (int c0 = 0; c0 < s.tokens; c0 += chunk) {
      const int len = std::min(chunk, s.tokens - c0);
      auto row = [&](int t) { return int64_t(c0 + t) * s.value_heads + h; };
      auto key = [&](int t) { return n.k.data() + (int64_t(c0 + t) * s.key_heads + h / group) * dk; };
      auto query = [&](int t) { return n.q.data() + (int64_t(c0 + t) * s.key_heads + h / group) * dk; };
      float cum = 0.0f;
      for (int t = 0; t < len; ++t) gamma[size_t(t)] = cum += g[row(t)];
      for (int t = 0; t < len; ++t) {
        const float* kt = key(t);
        const float* vt = v + row(t) * dv;
        const float start = std::exp(gamma[size_t(t)]), b = beta[row(t)];
        float* ut = u.data() + int64_t(t) * dv;
        for (int j = 0; j < dv; ++j) ut[j] = vt[j];
        for (int i = 0; i < dk; ++i)
          for (int j = 0; j < dv; ++j) ut[j] -= start * S[int64_t(i) * dv + j] * kt[i];
        for (int j = 0; j < dv; ++j) ut[j] *= b;
        for (int r = 0; r < t; ++r) {  // forward substitution
          const float a = b * std::exp(gamma[size_t(t)] - gamma[size_t(r)]) * dot(kt, key(r), dk);
          const float* ur = u.data() + int64_t(r) * dv;
          for (int j = 0; j < dv; ++j) ut[j] -= a * ur[j];
        }
        // o_t = S_t^T q_t, reading S0 and the corrections so far.
        const float* qt = query(t);
        float* o = out + row(t) * dv;
        std::fill(o, o + dv, 0.0f);
        for (int i = 0; i < dk; ++i)
          for (int j = 0; j < dv; ++j) o[j] += start * S[int64_t(i) * dv + j] * qt[i];
        for (int r = 0; r <= t; ++r) {
          const float a = std::exp(gamma[size_t(t)] - gamma[size_t(r)]) * dot(qt, key(r), dk);
          const float* ur = u.data() + int64_t(r) * dv;
          for (int j = 0; j < dv; ++j) o[j] += a * ur[j];
        }
      }
      // The state after the chunk's last token.
      const float last = gamma[size_t(len - 1)];
      const float carry = std::exp(last);
      for (int64_t i = 0; i < int64_t(dk) * dv; ++i) decayed[size_t(i)] = carry * S[i];
      for (int r = 0; r < len; ++r) {
        const float w = std::exp(last - gamma[size_t(r)]);
        const float* kr = key(r);
        const float* ur = u.data() + int64_t(r) * dv;
        for (int i = 0; i < dk; ++i)
          for (int j = 0; j < dv; ++j) decayed[size_t(int64_t(i) * dv + j)] += w * kr[i] * ur[j];
      }
      std::copy(decayed.begin(), decayed.end(), S);
    }
  }
}

}  // namespace troupe::cpu
