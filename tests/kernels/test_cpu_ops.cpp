// Every CPU op against a naive double-precision reference, on random inputs of several
// shapes including odd sizes. GPU ops get their rows in the CUDA op table.
#define BOOST_TEST_MODULE cpu_ops
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/cpu/causal_conv1d.hpp"
#include "kernels/cpu/embedding.hpp"
#include "kernels/cpu/gated_delta_rule.hpp"
#include "kernels/cpu/gated_rms_norm.hpp"
#include "kernels/cpu/kv_cache_write.hpp"
#include "kernels/cpu/log_softmax.hpp"
#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/moe_routing.hpp"
#include "kernels/cpu/paged_attention.hpp"
#include "kernels/cpu/rms_norm.hpp"
#include "kernels/cpu/rope.hpp"
#include "kernels/cpu/shared_expert_add.hpp"
#include "kernels/cpu/swiglu.hpp"
#include "tests/support/random.hpp"

using namespace troupe;

namespace {

// ||out - ref|| / ||ref||
double relative_error(const std::vector<float>& out, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    BOOST_REQUIRE(std::isfinite(out[i]));
    num += (out[i] - ref[i]) * (out[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

}  // namespace

BOOST_AUTO_TEST_CASE(matmul_matches_reference_for_every_dtype_and_shape) {
  uint32_t seed = 1;
  for (dtype type : {dtype::f32, dtype::f16, dtype::bf16})
    for (int m : {1, 2, 3, 17})
      for (int64_t rows : {1, 7, 33, 300})
        for (int64_t cols : {5, 64, 100}) {
          std::vector<uint8_t> storage;
          weight_view w = test::random_weight(type, rows, cols, seed++, storage);
          auto x = test::random_floats(size_t(m * cols), seed++);
          std::vector<float> y(static_cast<size_t>(m * rows), NAN);
          cpu::matmul(x.data(), m, w, y.data());
          std::vector<double> ref(y.size());
          for (int i = 0; i < m; ++i)
            for (int64_t r = 0; r < rows; ++r) {
              double s = 0;
              for (int64_t k = 0; k < cols; ++k)
                s += double(x[size_t(i * cols + k)]) * load_as_f32(type, w.row(r), size_t(k));
              ref[size_t(i * rows + r)] = s;
            }
          BOOST_TEST_CONTEXT("dtype " << dtype_name(type) << " m " << m << " rows " << rows << " cols " << cols)
          BOOST_TEST(relative_error(y, ref) < 1e-5);
        }
}

// Batching must not change a row: the decode path (m <= 2) and the tiled one round alike,
// also where cols leaves a tail after the 16-wide loop.
BOOST_AUTO_TEST_CASE(matmul_rows_do_not_depend_on_the_batch) {
  uint32_t seed = 200;
  for (dtype type : {dtype::f32, dtype::bf16})
    for (int64_t cols : {16, 24, 40, 100}) {
      std::vector<uint8_t> storage;
      weight_view w = test::random_weight(type, 33, cols, seed++, storage);
      auto x = test::random_floats(size_t(7 * cols), seed++);
      std::vector<float> one(33), two(2 * 33), seven(7 * 33);
      cpu::matmul(x.data(), 1, w, one.data());
      cpu::matmul(x.data(), 2, w, two.data());
      cpu::matmul(x.data(), 7, w, seven.data());
      BOOST_TEST_CONTEXT("dtype " << dtype_name(type) << " cols " << cols)
      for (size_t r = 0; r < 33; ++r) {
        BOOST_TEST(one[r] == seven[r]);
        BOOST_TEST(two[33 + r] == seven[33 + r]);
      }
    }
}

BOOST_AUTO_TEST_CASE(rms_norm_matches_reference) {
  for (int dim : {1, 7, 64, 129}) {
    const int rows = 5;
    auto x = test::random_floats(size_t(rows * dim), 10 + dim, 3.0f);
    auto w = test::random_floats(size_t(dim), 20 + dim);
    std::vector<float> out(x.size(), NAN);
    cpu::rms_norm(x.data(), w.data(), 1e-6f, rows, dim, out.data());
    std::vector<double> ref(x.size());
    for (int r = 0; r < rows; ++r) {
      double ss = 0;
      for (int i = 0; i < dim; ++i) ss += double(x[size_t(r * dim + i)]) * x[size_t(r * dim + i)];
      const double scale = 1.0 / std::sqrt(ss / dim + 1e-6);
      for (int i = 0; i < dim; ++i) ref[size_t(r * dim + i)] = w[size_t(i)] * x[size_t(r * dim + i)] * scale;
    }
    BOOST_TEST(relative_error(out, ref) < 1e-6);
  }
}

BOOST_AUTO_TEST_CASE(rope_rotates_half_pairs_by_position) {
  for (int head_dim : {2, 8, 34, 128}) {
    const int tokens = 3, heads = 2;
    const int positions[tokens] = {0, 5, 4095};
    auto x = test::random_floats(size_t(tokens * heads * head_dim), 30 + head_dim);
    std::vector<float> out = x;
    cpu::rope(out.data(), tokens, heads, head_dim, positions, 1e6f);
    std::vector<double> ref(x.size());
    const int half = head_dim / 2;
    for (int t = 0; t < tokens; ++t)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < half; ++i) {
          // The angle is formed in fp32 as transformers does; the rotation is checked in double.
          const float inv_freq = 1.0f / std::pow(1e6f, float(2 * i) / float(head_dim));
          const double angle = float(positions[t]) * inv_freq;
          const size_t base = size_t((t * heads + h) * head_dim);
          const double a = x[base + size_t(i)], b = x[base + size_t(i + half)];
          ref[base + size_t(i)] = a * std::cos(angle) - b * std::sin(angle);
          ref[base + size_t(i + half)] = b * std::cos(angle) + a * std::sin(angle);
        }
    BOOST_TEST(relative_error(out, ref) < 1e-5);
  }
}

BOOST_AUTO_TEST_CASE(partial_rope_rotates_only_the_leading_dims) {
  for (auto [head_dim, rotary] : {std::pair{16, 4}, {32, 8}, {64, 32}, {8, 8}}) {
    const int tokens = 3, heads = 3;
    const int positions[tokens] = {0, 7, 1000};
    auto x = test::random_floats(size_t(tokens * heads * head_dim), 40 + head_dim + rotary);
    std::vector<float> out = x;
    cpu::rope(out.data(), tokens, heads, head_dim, positions, 1e7f, rotary);
    std::vector<double> ref(x.begin(), x.end());
    const int half = rotary / 2;
    for (int t = 0; t < tokens; ++t)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < half; ++i) {
          const float inv_freq = 1.0f / std::pow(1e7f, float(2 * i) / float(rotary));
          const double angle = float(positions[t]) * inv_freq;
          const size_t base = size_t((t * heads + h) * head_dim);
          const double a = x[base + size_t(i)], b = x[base + size_t(i + half)];
          ref[base + size_t(i)] = a * std::cos(angle) - b * std::sin(angle);
          ref[base + size_t(i + half)] = b * std::cos(angle) + a * std::sin(angle);
        }
    BOOST_TEST_CONTEXT("head_dim " << head_dim << " rotary " << rotary) {
      BOOST_TEST(relative_error(out, ref) < 1e-5);
      for (size_t i = 0; i < x.size(); ++i)
        if (int(i % size_t(head_dim)) >= rotary) BOOST_TEST(out[i] == x[i]);
    }
  }
}

namespace {

// The conv of a whole sequence in double from its definition: zero-padded on the left.
std::vector<double> conv_reference(const std::vector<float>& x, int tokens, int channels, const std::vector<float>& w,
                                   int kernel) {
  std::vector<double> ref(x.size());
  for (int t = 0; t < tokens; ++t)
    for (int c = 0; c < channels; ++c) {
      double s = 0;
      for (int j = 0; j < kernel; ++j) {
        const int src = t + j - (kernel - 1);
        if (src >= 0) s += double(w[size_t(c * kernel + j)]) * x[size_t(src * channels + c)];
      }
      ref[size_t(t * channels + c)] = s / (1.0 + std::exp(-s));
    }
  return ref;
}

}  // namespace

// One call over the whole sequence, calls over pieces (some shorter than the state) and
// one call a token (decode) all match the definition, and leave the last inputs as state.
BOOST_AUTO_TEST_CASE(causal_conv1d_matches_reference_whole_in_pieces_and_token_by_token) {
  uint32_t seed = 300;
  for (int kernel : {1, 2, 4})
    for (int channels : {1, 5, 33})
      for (int tokens : {1, 3, 17}) {
        auto x = test::random_floats(size_t(tokens * channels), seed++);
        auto w = test::random_floats(size_t(channels * kernel), seed++, 0.7f);
        const auto ref = conv_reference(x, tokens, channels, w, kernel);
        const size_t state_size = size_t((kernel - 1) * channels);
        for (int piece : {tokens, 2, 1}) {
          std::vector<float> state(state_size, 0.0f), out(x.size(), NAN);
          for (int t0 = 0; t0 < tokens; t0 += piece) {
            const int n = std::min(piece, tokens - t0);
            cpu::causal_conv1d_silu(x.data() + t0 * channels, n, channels, w.data(), kernel, state.data(),
                                    out.data() + t0 * channels);
          }
          BOOST_TEST_CONTEXT("kernel " << kernel << " channels " << channels << " tokens " << tokens << " pieces of "
                                       << piece) {
            BOOST_TEST(relative_error(out, ref) < 1e-6);
            for (int r = 0; r < kernel - 1; ++r) {  // state row r holds input tokens - (kernel - 1) + r
              const int src = tokens - (kernel - 1) + r;
              for (int c = 0; c < channels; ++c)
                BOOST_TEST(state[size_t(r * channels + c)] == (src >= 0 ? x[size_t(src * channels + c)] : 0.0f));
            }
          }
        }
      }
}

BOOST_AUTO_TEST_CASE(gated_rms_norm_matches_reference) {
  for (int dim : {1, 12, 128}) {
    const int rows = 6;
    auto x = test::random_floats(size_t(rows * dim), 400 + dim, 2.0f);
    auto z = test::random_floats(size_t(rows * dim), 410 + dim, 3.0f);
    auto w = test::random_floats(size_t(dim), 420 + dim);
    std::vector<float> out(x.size(), NAN);
    cpu::gated_rms_norm(x.data(), z.data(), w.data(), 1e-6f, rows, dim, out.data());
    std::vector<double> ref(x.size());
    for (int r = 0; r < rows; ++r) {
      double ss = 0;
      for (int i = 0; i < dim; ++i) ss += double(x[size_t(r * dim + i)]) * x[size_t(r * dim + i)];
      const double scale = 1.0 / std::sqrt(ss / dim + 1e-6);
      for (int i = 0; i < dim; ++i) {
        const double zi = z[size_t(r * dim + i)];
        ref[size_t(r * dim + i)] = w[size_t(i)] * x[size_t(r * dim + i)] * scale * zi / (1.0 + std::exp(-zi));
      }
    }
    BOOST_TEST(relative_error(out, ref) < 1e-6);
  }
}

namespace {

struct delta_rule_case {
  cpu::delta_rule_shape shape;
  std::vector<float> q, k, v, g, beta, state;
};

delta_rule_case random_delta_rule_case(cpu::delta_rule_shape s, uint32_t seed) {
  delta_rule_case c{s,
                    test::random_floats(size_t(s.tokens * s.key_heads * s.key_dim), seed),
                    test::random_floats(size_t(s.tokens * s.key_heads * s.key_dim), seed + 1),
                    test::random_floats(size_t(s.tokens * s.value_heads * s.value_dim), seed + 2),
                    test::random_floats(size_t(s.tokens * s.value_heads), seed + 3),
                    test::random_floats(size_t(s.tokens * s.value_heads), seed + 4, 2.0f),
                    test::random_floats(size_t(s.value_heads * s.key_dim * s.value_dim), seed + 5, 0.5f)};
  // Log decays from about -3 to -0.001 (states that forget fast and ones that barely do),
  // beta in (0, 1) as the sigmoid gives it.
  for (float& x : c.g) x = -std::exp(1.5f * x - 1.0f);
  for (float& x : c.beta) x = 1.0f / (1.0f + std::exp(-x));
  return c;
}

// The rule in double, token by token, straight from its definition.
std::pair<std::vector<double>, std::vector<double>> delta_rule_reference(const delta_rule_case& c) {
  const auto& s = c.shape;
  const int dk = s.key_dim, dv = s.value_dim, group = s.value_heads / s.key_heads;
  std::vector<double> state(c.state.begin(), c.state.end());
  std::vector<double> out(size_t(s.tokens * s.value_heads * dv));
  auto normalised = [&](const std::vector<float>& x, int t, int kh, double extra) {
    std::vector<double> r(static_cast<size_t>(dk));
    double ss = 0;
    for (int i = 0; i < dk; ++i)
      ss += double(x[size_t((t * s.key_heads + kh) * dk + i)]) * x[size_t((t * s.key_heads + kh) * dk + i)];
    for (int i = 0; i < dk; ++i)
      r[size_t(i)] = x[size_t((t * s.key_heads + kh) * dk + i)] / std::sqrt(ss + 1e-6) * extra;
    return r;
  };
  for (int t = 0; t < s.tokens; ++t)
    for (int h = 0; h < s.value_heads; ++h) {
      const auto q = normalised(c.q, t, h / group, 1.0 / std::sqrt(double(dk)));
      const auto k = normalised(c.k, t, h / group, 1.0);
      double* S = state.data() + size_t(h * dk * dv);
      const double decay = std::exp(double(c.g[size_t(t * s.value_heads + h)]));
      const double beta = c.beta[size_t(t * s.value_heads + h)];
      for (int i = 0; i < dk * dv; ++i) S[i] *= decay;
      for (int j = 0; j < dv; ++j) {
        double predicted = 0;
        for (int i = 0; i < dk; ++i) predicted += S[i * dv + j] * k[size_t(i)];
        const double delta = beta * (c.v[size_t((t * s.value_heads + h) * dv + j)] - predicted);
        for (int i = 0; i < dk; ++i) S[i * dv + j] += k[size_t(i)] * delta;
      }
      for (int j = 0; j < dv; ++j) {
        double o = 0;
        for (int i = 0; i < dk; ++i) o += S[i * dv + j] * q[size_t(i)];
        out[size_t((t * s.value_heads + h) * dv + j)] = o;
      }
    }
  return {out, state};
}

}  // namespace

// Both forms against the definition from a non-zero state, on shapes with grouped and
// ungrouped heads, key and value dims that differ, and chunks that do and do not divide the
// tokens; the chunked form also in two calls that carry the state between them.
BOOST_AUTO_TEST_CASE(gated_delta_rule_forms_match_each_other_and_the_definition) {
  uint32_t seed = 500;
  for (cpu::delta_rule_shape shape :
       {cpu::delta_rule_shape{1, 1, 1, 4, 4}, {5, 2, 4, 8, 6}, {37, 3, 3, 5, 7}, {130, 2, 6, 16, 12}}) {
    const auto c = random_delta_rule_case(shape, seed += 10);
    const auto [ref_out, ref_state] = delta_rule_reference(c);
    const size_t out_size = ref_out.size();
    BOOST_TEST_CONTEXT("tokens " << shape.tokens << " heads " << shape.key_heads << "/" << shape.value_heads << " dims "
                                 << shape.key_dim << "/" << shape.value_dim) {
      std::vector<float> state = c.state, out(out_size, NAN);
      cpu::gated_delta_rule_recurrent(c.q.data(), c.k.data(), c.v.data(), c.g.data(), c.beta.data(), shape,
                                      state.data(), out.data());
      BOOST_TEST(relative_error(out, ref_out) < 1e-5);
      BOOST_TEST(relative_error(state, ref_state) < 1e-5);
      for (int chunk : {1, 4, 16, 64}) {
        std::vector<float> chunked_state = c.state, chunked(out_size, NAN);
        cpu::gated_delta_rule_chunked(c.q.data(), c.k.data(), c.v.data(), c.g.data(), c.beta.data(), shape, chunk,
                                      chunked_state.data(), chunked.data());
        BOOST_TEST_CONTEXT("chunk " << chunk) {
          BOOST_TEST(relative_error(chunked, ref_out) < 1e-5);
          BOOST_TEST(relative_error(chunked_state, ref_state) < 1e-5);
          BOOST_TEST(relative_error(chunked, std::vector<double>(out.begin(), out.end())) < 1e-5);
        }
      }
      // A prompt fed in two calls: the state the first leaves is where the second starts.
      const int first = shape.tokens / 2, rest = shape.tokens - first;
      if (first > 0) {
        const int kq = shape.key_heads * shape.key_dim, vr = shape.value_heads * shape.value_dim,
                  gr = shape.value_heads;
        std::vector<float> split_state = c.state, split(out_size, NAN);
        cpu::delta_rule_shape a = shape, b = shape;
        a.tokens = first;
        b.tokens = rest;
        cpu::gated_delta_rule_chunked(c.q.data(), c.k.data(), c.v.data(), c.g.data(), c.beta.data(), a, 16,
                                      split_state.data(), split.data());
        cpu::gated_delta_rule_chunked(c.q.data() + first * kq, c.k.data() + first * kq, c.v.data() + first * vr,
                                      c.g.data() + first * gr, c.beta.data() + first * gr, b, 16, split_state.data(),
                                      split.data() + first * vr);
        BOOST_TEST(relative_error(split, ref_out) < 1e-5);
        BOOST_TEST(relative_error(split_state, ref_state) < 1e-5);
      }
    }
  }
}

// Keys and values go through kv_cache_write into shuffled blocks, then paged_attention
// reads them back: compared with dense attention over the same keys in double.
BOOST_AUTO_TEST_CASE(paged_attention_matches_dense_reference_with_gqa) {
  struct shape {
    int tokens, start, heads, kv_heads, head_dim, block_size;
  };
  for (shape s : {shape{1, 0, 1, 1, 4, 16}, shape{1, 9, 4, 2, 16, 4}, shape{7, 3, 6, 1, 8, 3}, shape{5, 0, 4, 4, 33, 1},
                  shape{20, 17, 2, 1, 8, 16}}) {
    const int total = s.start + s.tokens, row = s.kv_heads * s.head_dim;
    auto q = test::random_floats(size_t(s.tokens * s.heads * s.head_dim), 40 + total);
    auto k = test::random_floats(size_t(total * row), 50 + total);
    auto v = test::random_floats(k.size(), 60 + total);
    const int blocks = (total + s.block_size - 1) / s.block_size;
    std::vector<int> table(static_cast<size_t>(blocks));
    for (int b = 0; b < blocks; ++b) table[size_t(b)] = (b * 7 + 3) % blocks;  // a permutation
    std::vector<float> key_pool(size_t(blocks * s.block_size * row), NAN), value_pool(key_pool.size(), NAN);
    cpu::kv_cache_write(k.data(), v.data(), s.start, row, table.data(), s.block_size, 0, key_pool.data(),
                        value_pool.data());
    cpu::kv_cache_write(k.data() + s.start * row, v.data() + s.start * row, s.tokens, row, table.data(), s.block_size,
                        s.start, key_pool.data(), value_pool.data());
    std::vector<float> out(q.size(), NAN);
    cpu::paged_attention(q.data(), s.tokens, s.heads, s.kv_heads, s.head_dim,
                         {key_pool.data(), value_pool.data(), table.data(), s.block_size}, s.start, out.data());
    std::vector<double> ref(q.size());
    const int group = s.heads / s.kv_heads;
    for (int t = 0; t < s.tokens; ++t)
      for (int h = 0; h < s.heads; ++h) {
        const int visible = s.start + t + 1, kvh = h / group;
        std::vector<double> p(static_cast<size_t>(visible));
        for (int j = 0; j < visible; ++j) {
          double d = 0;
          for (int i = 0; i < s.head_dim; ++i)
            d += double(q[size_t((t * s.heads + h) * s.head_dim + i)]) * k[size_t(j * row + kvh * s.head_dim + i)];
          p[size_t(j)] = d / std::sqrt(double(s.head_dim));
        }
        const double mx = *std::max_element(p.begin(), p.end());
        double total_p = 0;
        for (double& e : p) total_p += (e = std::exp(e - mx));
        for (int i = 0; i < s.head_dim; ++i) {
          double acc = 0;
          for (int j = 0; j < visible; ++j) acc += p[size_t(j)] / total_p * v[size_t(j * row + kvh * s.head_dim + i)];
          ref[size_t((t * s.heads + h) * s.head_dim + i)] = acc;
        }
      }
    BOOST_TEST(relative_error(out, ref) < 1e-5);
  }
}

BOOST_AUTO_TEST_CASE(route_top_k_picks_largest_probabilities) {
  for (bool normalize : {true, false})
    for (int experts : {4, 9, 128}) {
      const int k = std::min(experts, 8);
      auto logits = test::random_floats(size_t(experts), 70 + experts, 2.0f);
      std::vector<int> chosen(static_cast<size_t>(k), -1);
      std::vector<float> weights(static_cast<size_t>(k), NAN);
      cpu::route_top_k(logits.data(), experts, k, normalize, chosen.data(), weights.data());
      std::vector<double> probs(static_cast<size_t>(experts));
      double total = 0;
      for (int e = 0; e < experts; ++e) total += (probs[size_t(e)] = std::exp(double(logits[size_t(e)])));
      std::vector<int> order(static_cast<size_t>(experts));
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](int a, int b) { return probs[size_t(a)] > probs[size_t(b)]; });
      double picked = 0;
      for (int i = 0; i < k; ++i) picked += probs[size_t(order[size_t(i)])] / total;
      for (int i = 0; i < k; ++i) {
        BOOST_TEST(chosen[size_t(i)] == order[size_t(i)]);
        const double p = probs[size_t(order[size_t(i)])] / total;
        BOOST_TEST(weights[size_t(i)] == (normalize ? p / picked : p), boost::test_tools::tolerance(1e-5));
      }
    }
}

BOOST_AUTO_TEST_CASE(swiglu_and_log_softmax_match_reference) {
  auto gate = test::random_floats(1001, 80, 4.0f), up = test::random_floats(1001, 81);
  std::vector<float> out(gate.size(), NAN);
  cpu::swiglu(gate.data(), up.data(), int64_t(gate.size()), out.data());
  std::vector<double> ref(gate.size());
  for (size_t i = 0; i < gate.size(); ++i) ref[i] = gate[i] / (1.0 + std::exp(-double(gate[i]))) * up[i];
  BOOST_TEST(relative_error(out, ref) < 1e-6);

  auto x = test::random_floats(151936, 82, 5.0f);
  std::vector<float> lp(x.size(), NAN);
  cpu::log_softmax(x.data(), int(x.size()), lp.data());
  double total = 0;
  for (float v : x) total += std::exp(double(v));
  for (size_t i = 0; i < x.size(); i += 997)
    BOOST_TEST(lp[i] == x[i] - std::log(total), boost::test_tools::tolerance(1e-4));
}

BOOST_AUTO_TEST_CASE(shared_expert_add_matches_reference) {
  for (auto [tokens, width] : {std::pair{1, 7}, std::pair{5, 2048}}) {
    auto out = test::random_floats(size_t(tokens) * width, 90, 2.0f);
    const auto expert = test::random_floats(out.size(), 91, 2.0f), gate = test::random_floats(size_t(tokens), 92, 4.0f);
    std::vector<double> ref(out.begin(), out.end());
    for (int t = 0; t < tokens; ++t)
      for (int i = 0; i < width; ++i)
        ref[size_t(t) * width + i] += expert[size_t(t) * width + i] / (1.0 + std::exp(-double(gate[size_t(t)])));
    cpu::shared_expert_add(out.data(), expert.data(), gate.data(), tokens, width);
    BOOST_TEST(relative_error(out, ref) < 1e-6);
  }
}

BOOST_AUTO_TEST_CASE(embedding_gathers_rows_as_f32) {
  for (dtype type : {dtype::f32, dtype::f16, dtype::bf16}) {
    std::vector<uint8_t> storage;
    weight_view table = test::random_weight(type, 50, 19, 90, storage);
    const int ids[] = {49, 0, 7, 7};
    std::vector<float> out(4 * 19, NAN);
    cpu::embedding(table, ids, 4, out.data());
    for (int t = 0; t < 4; ++t)
      for (int i = 0; i < 19; ++i)
        BOOST_TEST(out[size_t(t * 19 + i)] == load_as_f32(type, table.row(ids[t]), size_t(i)));
  }
}

BOOST_AUTO_TEST_CASE(half_precision_conversions_round_trip) {
  for (float v : {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 6.1e-5f, 2.98023224e-07f, 1e-3f}) {
    BOOST_TEST(f16_to_f32(f32_to_f16(v)) == v, boost::test_tools::tolerance(1e-3f));
    BOOST_TEST(bf16_to_f32(f32_to_bf16(v)) == v, boost::test_tools::tolerance(1e-2f));
  }
  BOOST_TEST(std::isinf(f16_to_f32(f32_to_f16(1e6f))));
  BOOST_TEST(std::isnan(bf16_to_f32(f32_to_bf16(NAN))));
}
