// Every CPU op against a naive double-precision reference, on random inputs of several
// shapes including odd sizes. GPU ops get their rows in the CUDA op table.
#define BOOST_TEST_MODULE cpu_ops
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/cpu/embedding.hpp"
#include "kernels/cpu/kv_cache_write.hpp"
#include "kernels/cpu/log_softmax.hpp"
#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/moe_routing.hpp"
#include "kernels/cpu/paged_attention.hpp"
#include "kernels/cpu/rms_norm.hpp"
#include "kernels/cpu/rope.hpp"
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

// Keys and values go through kv_cache_write into shuffled blocks, then paged_attention
// reads them back: compared with dense attention over the same keys in double.
BOOST_AUTO_TEST_CASE(paged_attention_matches_dense_reference_with_gqa) {
  struct shape { int tokens, start, heads, kv_heads, head_dim, block_size; };
  for (shape s : {shape{1, 0, 1, 1, 4, 16}, shape{1, 9, 4, 2, 16, 4}, shape{7, 3, 6, 1, 8, 3},
                  shape{5, 0, 4, 4, 33, 1}, shape{20, 17, 2, 1, 8, 16}}) {
    const int total = s.start + s.tokens, row = s.kv_heads * s.head_dim;
    auto q = test::random_floats(size_t(s.tokens * s.heads * s.head_dim), 40 + total);
    auto k = test::random_floats(size_t(total * row), 50 + total);
    auto v = test::random_floats(k.size(), 60 + total);
    const int blocks = (total + s.block_size - 1) / s.block_size;
    std::vector<int> table(static_cast<size_t>(blocks));
    for (int b = 0; b < blocks; ++b) table[size_t(b)] = (b * 7 + 3) % blocks;  // a permutation
    std::vector<float> key_pool(size_t(blocks * s.block_size * row), NAN), value_pool(key_pool.size(), NAN);
    cpu::kv_cache_write(k.data(), v.data(), s.start, row, table.data(), s.block_size, 0, key_pool.data(), value_pool.data());
    cpu::kv_cache_write(k.data() + s.start * row, v.data() + s.start * row, s.tokens, row, table.data(),
                        s.block_size, s.start, key_pool.data(), value_pool.data());
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

BOOST_AUTO_TEST_CASE(embedding_gathers_rows_as_f32) {
  for (dtype type : {dtype::f32, dtype::f16, dtype::bf16}) {
    std::vector<uint8_t> storage;
    weight_view table = test::random_weight(type, 50, 19, 90, storage);
    const int ids[] = {49, 0, 7, 7};
    std::vector<float> out(4 * 19, NAN);
    cpu::embedding(table, ids, 4, out.data());
    for (int t = 0; t < 4; ++t)
      for (int i = 0; i < 19; ++i) BOOST_TEST(out[size_t(t * 19 + i)] == load_as_f32(type, table.row(ids[t]), size_t(i)));
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
