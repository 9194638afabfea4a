// fused_moe split over expert-parallel ranks: each rank's fused_moe_rows over its experts,
// then moe_combine_ranks over every rank's rows, must give fused_moe's bits (without a
// cuBLAS handle) over all experts, on moe_gemv batches and on the 16- and 64-row tiles,
// for even, uneven and three-way splits, called directly and from a captured graph. Each
// rank's rows are checked against the CPU too, and rows of pairs it does not serve must
// stay as they were (NaN). moe_combine_ranks itself is checked against the CPU's fp32 sum
// in j order, to the bit.
#define BOOST_TEST_MODULE cuda_moe_split
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <vector>

#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/swiglu.hpp"
#include "kernels/cuda/fused_moe.cuh"
#include "kernels/cuda/moe_combine_ranks.cuh"
#include "tests/kernels/cuda_test_support.hpp"

using namespace troupe;
using namespace troupe::test;

namespace {

constexpr float f32_nan = std::numeric_limits<float>::quiet_NaN();

struct shape {
  int tokens, experts, k, hidden, inter;
  std::vector<int> bounds;  // the ranks' ranges: [bounds[i], bounds[i + 1])
};

// The rows one rank's experts give on the CPU, [tokens * k, hidden], NaN where it serves none.
std::vector<float> reference_rows(const std::vector<float>& x, const routing& r, const shape& s,
                                  const std::vector<uint16_t>& w13, const std::vector<uint16_t>& w2, int first,
                                  int last) {
  const size_t h = size_t(s.hidden), inter = size_t(s.inter);
  std::vector<float> y(r.chosen.size() * h, f32_nan);
  std::vector<float> g(2 * inter), act(inter), down(h);
  for (size_t p = 0; p < r.chosen.size(); ++p) {
    const int e = r.chosen[p];
    if (e < first || e >= last) continue;
    cpu::matmul(x.data() + p / size_t(s.k) * h, 1,
                {dtype::bf16, int64_t(2 * inter), s.hidden, w13.data() + size_t(e) * 2 * inter * h}, g.data());
    cpu::swiglu(g.data(), g.data() + inter, s.inter, act.data());
    for (float& a : act) a = bf16_to_f32(f32_to_bf16(a));
    cpu::matmul(act.data(), 1, {dtype::bf16, s.hidden, s.inter, w2.data() + size_t(e) * h * inter}, down.data());
    for (size_t n = 0; n < h; ++n) y[p * h + n] = r.weights[p] * down[n];
  }
  return y;
}

// A rank's rows through fused_moe_rows (its experts' slices of w13 and w2), directly or
// from a captured graph, over a NaN-filled y and an all-ones workspace.
std::vector<float> rank_rows(device_buffer<uint16_t>& x, device_buffer<int>& chosen, device_buffer<float>& weights,
                             const shape& s, const std::vector<uint16_t>& w13, const std::vector<uint16_t>& w2,
                             int first, int last, bool graph) {
  const size_t h = size_t(s.hidden), inter = size_t(s.inter);
  device_buffer<uint16_t> d_w13(std::vector<uint16_t>(w13.begin() + ptrdiff_t(size_t(first) * 2 * inter * h),
                                                      w13.begin() + ptrdiff_t(size_t(last) * 2 * inter * h)));
  device_buffer<uint16_t> d_w2(std::vector<uint16_t>(w2.begin() + ptrdiff_t(size_t(first) * h * inter),
                                                     w2.begin() + ptrdiff_t(size_t(last) * h * inter)));
  device_buffer<float> y(size_t(s.tokens) * size_t(s.k) * h, f32_nan);
  device_buffer<uint8_t> workspace(cuda::fused_moe_workspace_bytes(s.tokens, s.k, last - first, s.hidden, s.inter),
                                   0xff);
  cudaStream_t stream = nullptr;
  TROUPE_CUDA_CHECK(cudaStreamCreate(&stream));
  auto call = [&] {
    cuda::fused_moe_rows(x.bf16(), s.tokens, s.hidden, chosen.get(), weights.get(), s.k, d_w13.bf16(), d_w2.bf16(),
                         s.inter, first, last, s.experts, workspace.get(), y.get(), stream);
  };
  if (graph) {
    cudaGraph_t captured = nullptr;
    cudaGraphExec_t exec = nullptr;
    TROUPE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    call();
    TROUPE_CUDA_CHECK(cudaStreamEndCapture(stream, &captured));
    TROUPE_CUDA_CHECK(cudaGraphInstantiate(&exec, captured, 0));
    TROUPE_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    TROUPE_CUDA_CHECK(cudaStreamSynchronize(stream));
    TROUPE_CUDA_CHECK(cudaGraphExecDestroy(exec));
    TROUPE_CUDA_CHECK(cudaGraphDestroy(captured));
  } else {
    call();
  }
  TROUPE_CUDA_CHECK(cudaStreamSynchronize(stream));
  TROUPE_CUDA_CHECK(cudaStreamDestroy(stream));
  return y.to_host();
}

// The experts' weights in fused_moe's layout, random for the experts some pair chose and
// NaN for the others (a read of one fails the test).
struct expert_weights {
  bf16_values w13, w2;
};

expert_weights random_experts(const routing& r, const shape& s, uint32_t seed) {
  const size_t h = size_t(s.hidden), inter = size_t(s.inter), e = size_t(s.experts);
  const size_t w13_size = 2 * inter * h, w2_size = h * inter;
  expert_weights w{{std::vector<uint16_t>(e * w13_size, bf16_nan), std::vector<float>(e * w13_size, f32_nan)},
                   {std::vector<uint16_t>(e * w2_size, bf16_nan), std::vector<float>(e * w2_size, f32_nan)}};
  std::vector<bool> used(e, false);
  for (int c : r.chosen) used[size_t(c)] = true;
  for (size_t i = 0; i < e; ++i) {
    if (!used[i]) continue;
    const auto w13 = random_bf16(w13_size, seed + 2 * uint32_t(i), 1.0f / std::sqrt(float(s.hidden)));
    const auto w2 = random_bf16(w2_size, seed + 2 * uint32_t(i) + 1, 1.0f / std::sqrt(float(s.inter)));
    std::copy(w13.bits.begin(), w13.bits.end(), w.w13.bits.begin() + ptrdiff_t(i * w13_size));
    std::copy(w13.values.begin(), w13.values.end(), w.w13.values.begin() + ptrdiff_t(i * w13_size));
    std::copy(w2.bits.begin(), w2.bits.end(), w.w2.bits.begin() + ptrdiff_t(i * w2_size));
    std::copy(w2.values.begin(), w2.values.end(), w.w2.values.begin() + ptrdiff_t(i * w2_size));
  }
  return w;
}

// A rank's rows: its pairs' rows near the CPU's, the others' as they were (NaN).
void check_rank_rows(const std::string& what, const std::vector<float>& got, const routing& r, const shape& s,
                     int first, int last, const std::vector<float>& ref) {
  const size_t h = size_t(s.hidden);
  std::vector<float> served, served_ref;
  bool others_untouched = true;
  for (size_t p = 0; p < r.chosen.size(); ++p) {
    const bool mine = r.chosen[p] >= first && r.chosen[p] < last;
    for (size_t n = 0; n < h; ++n) {
      if (mine) {
        served.push_back(got[p * h + n]);
        served_ref.push_back(ref[p * h + n]);
      } else if (!std::isnan(got[p * h + n])) {
        others_untouched = false;
      }
    }
  }
  BOOST_TEST(others_untouched, what << ": rows of pairs it does not serve stay as they were");
  if (!served.empty()) expect_close(what + "'s rows", served, served_ref, bf16_tolerance);
}

// Every rank's rows next to the CPU's, and their combination next to fused_moe's bits,
// called directly and from a captured graph.
void check_split(const shape& s, uint32_t seed) {
  std::ostringstream name;
  name << "tokens " << s.tokens << " of top-" << s.k << " over " << s.experts << " experts, hidden " << s.hidden
       << " inter " << s.inter << ", ranks";
  for (size_t i = 0; i + 1 < s.bounds.size(); ++i) name << " [" << s.bounds[i] << ", " << s.bounds[i + 1] << ")";
  BOOST_TEST_MESSAGE(name.str());
  const size_t h = size_t(s.hidden);
  const routing r = random_routing(s.tokens, s.experts, s.k, seed);
  const auto x = random_bf16(size_t(s.tokens) * h, seed + 1);
  const expert_weights weights = random_experts(r, s, seed + 2);
  const bf16_values &w13 = weights.w13, &w2 = weights.w2;

  device_buffer<uint16_t> d_x(x.bits), d_w13(w13.bits), d_w2(w2.bits);
  device_buffer<int> d_chosen(r.chosen);
  device_buffer<float> d_weights(r.weights);
  device_buffer<uint16_t> whole(size_t(s.tokens) * h, bf16_nan);
  device_buffer<uint8_t> workspace(cuda::fused_moe_workspace_bytes(s.tokens, s.k, s.experts, s.hidden, s.inter), 0xff);
  cuda::fused_moe(d_x.bf16(), s.tokens, s.hidden, d_chosen.get(), d_weights.get(), s.k, d_w13.bf16(), d_w2.bf16(),
                  s.inter, 0, s.experts, workspace.get(), whole.bf16(), nullptr, nullptr);
  const std::vector<uint16_t> want = whole.to_host();

  for (bool graph : {false, true}) {
    const std::string how = name.str() + (graph ? " (graph)" : "");
    std::vector<std::unique_ptr<device_buffer<float>>> rows;
    std::vector<cuda::moe_rows_part> parts;
    for (size_t i = 0; i + 1 < s.bounds.size(); ++i) {
      const int first = s.bounds[i], last = s.bounds[i + 1];
      const auto got = rank_rows(d_x, d_chosen, d_weights, s, w13.bits, w2.bits, first, last, graph);
      if (!graph)
        check_rank_rows(how + ": rank " + std::to_string(i), got, r, s, first, last,
                        reference_rows(x.values, r, s, w13.bits, w2.bits, first, last));
      rows.push_back(std::make_unique<device_buffer<float>>(got));
      parts.push_back({first, last, rows.back()->get()});
    }
    device_buffer<uint16_t> combined(size_t(s.tokens) * h, bf16_nan);
    cuda::moe_combine_ranks(parts.data(), int(parts.size()), d_chosen.get(), s.tokens, s.k, s.hidden, combined.bf16(),
                            nullptr);
    BOOST_TEST((combined.to_host() == want), how << ": the ranks' rows combined are fused_moe's bits");
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(fused_moe_split_over_ranks_gives_fused_moes_bits) {
  // moe_gemv (at most 64 pairs): batch 1 of the real shape, batch 8 of its hidden and inter
  // sizes, a small one; 16-row tiles (under 16 pairs per expert of the whole model, where
  // one rank alone would have more): batch 24 at the real sizes, small ones split two and
  // three ways; 64-row tiles. Ten picks a token, more than moe_gemv's down kernel has warps.
  const std::vector<shape> shapes{
      {1, 128, 8, 2048, 768, {0, 64, 128}}, {8, 16, 8, 2048, 768, {0, 8, 16}},   {3, 64, 10, 512, 256, {0, 32, 64}},
      {5, 16, 4, 80, 48, {0, 5, 16}},       {24, 32, 8, 2048, 768, {0, 16, 32}}, {40, 16, 4, 96, 80, {0, 8, 16}},
      {40, 16, 4, 96, 80, {0, 3, 11, 16}},  {100, 16, 4, 128, 64, {0, 8, 16}},   {300, 8, 2, 256, 128, {0, 4, 8}},
      {600, 16, 4, 256, 128, {0, 7, 16}},
  };
  uint32_t seed = 900;
  for (const shape& s : shapes) {
    check_split(s, seed);
    seed += 1000;
  }
}

BOOST_AUTO_TEST_CASE(moe_combine_ranks_sums_each_token_in_routing_order_to_the_bit) {
  const int tokens = 37, k = 6, hidden = 132, experts = 20;
  const std::vector<int> bounds{0, 7, 9, 20};
  const routing r = random_routing(tokens, experts, k, 950);
  std::vector<std::vector<float>> ys;
  for (size_t i = 0; i + 1 < bounds.size(); ++i)
    ys.push_back(random_floats(size_t(tokens) * k * hidden, 951 + uint32_t(i)));
  std::vector<uint16_t> want(size_t(tokens) * hidden);
  for (int t = 0; t < tokens; ++t)
    for (int n = 0; n < hidden; ++n) {
      float sum = 0.0f;
      for (int j = 0; j < k; ++j) {
        const int e = r.chosen[size_t(t * k + j)];
        const size_t part = size_t(std::upper_bound(bounds.begin(), bounds.end(), e) - bounds.begin()) - 1;
        sum += ys[part][(size_t(t) * k + j) * hidden + size_t(n)];
      }
      want[size_t(t) * hidden + size_t(n)] = f32_to_bf16(sum);
    }
  device_buffer<int> chosen(r.chosen);
  std::vector<std::unique_ptr<device_buffer<float>>> rows;
  std::vector<cuda::moe_rows_part> parts;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    rows.push_back(std::make_unique<device_buffer<float>>(ys[i]));
    parts.push_back({bounds[i], bounds[i + 1], rows.back()->get()});
  }
  device_buffer<uint16_t> out(size_t(tokens) * hidden, bf16_nan);
  cuda::moe_combine_ranks(parts.data(), int(parts.size()), chosen.get(), tokens, k, hidden, out.bf16(), nullptr);
  BOOST_TEST(out.to_host() == want, boost::test_tools::per_element());
}
