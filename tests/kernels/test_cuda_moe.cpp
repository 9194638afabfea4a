// fused_moe and its moe_align plan against the CPU. The reference experts are cpu::matmul
// and cpu::swiglu on the same bf16-rounded inputs, with the activation rounded to bf16
// between the projections as on the GPU. Outputs and the workspace are poisoned with NaN
// (all-ones bytes) before each run, and the experts no pair chose hold NaN weights, so an
// unwritten element or a read of the wrong expert fails. Each path runs twice on one
// workspace, so one that leans on what the previous call left there fails too.
#define BOOST_TEST_MODULE cuda_moe
#include <boost/test/unit_test.hpp>

#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <sstream>
#include <vector>

#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/swiglu.hpp"
#include "kernels/cuda/fused_moe.cuh"
#include "kernels/cuda/moe_align.cuh"
#include "tests/kernels/cuda_test_support.hpp"

using namespace troupe;
using namespace troupe::test;

namespace {

constexpr uint16_t bf16_all_ones = 0xffff;  // a NaN

// Tokens [1, 1 + count) get `expert` as their last choice, unless they have it already.
void make_hot(routing& r, int k, int expert, int count) {
  for (int t = 1; t <= count; ++t) {
    const auto first = r.chosen.begin() + ptrdiff_t(t) * k;
    if (std::find(first, first + k, expert) == first + k) first[k - 1] = expert;
  }
}

// Every choice of `expert` after the first `keep` moves to one of experts [spare, spare +
// k) its token has not chosen (of k of them, one is free).
void thin_out(routing& r, int k, int expert, int keep, int spare) {
  for (size_t t = 0; t < r.chosen.size() / size_t(k); ++t) {
    const auto first = r.chosen.begin() + ptrdiff_t(t) * k;
    const auto it = std::find(first, first + k, expert);
    if (it == first + k || keep-- > 0) continue;
    for (int e = spare; e < spare + k; ++e)
      if (std::find(first, first + k, e) == first + k) {
        *it = e;
        break;
      }
  }
}

// What moe_align should produce, built the obvious way.
struct plan_reference {
  std::vector<int> counts, offsets, sorted_pairs, tiles;  // tiles as (expert, row) ints
};

plan_reference reference_plan(const std::vector<int>& chosen, int first_expert, int local_experts, int tile_rows) {
  plan_reference r;
  r.counts.assign(size_t(local_experts), 0);
  for (int e : chosen)
    if (e >= first_expert && e < first_expert + local_experts) ++r.counts[size_t(e - first_expert)];
  r.offsets.push_back(0);
  for (int c : r.counts) r.offsets.push_back(r.offsets.back() + (c + tile_rows - 1) / tile_rows * tile_rows);
  r.sorted_pairs.assign(size_t(r.offsets.back()), -1);
  std::vector<int> next(r.offsets.begin(), r.offsets.end() - 1);
  for (size_t p = 0; p < chosen.size(); ++p) {
    const int e = chosen[p] - first_expert;
    if (e >= 0 && e < local_experts) r.sorted_pairs[size_t(next[size_t(e)]++)] = int(p);
  }
  for (int e = 0; e < local_experts; ++e)
    for (int row = r.offsets[size_t(e)]; row < r.offsets[size_t(e) + 1]; row += tile_rows)
      r.tiles.insert(r.tiles.end(), {e, row});
  return r;
}

// A layer's local experts in fused_moe's layout, as bf16 bits. Experts in `used` get
// random weights scaled to keep activations near 1; the others are NaN.
struct expert_weights {
  std::vector<uint16_t> w13, w2;
};

expert_weights random_experts(const std::vector<bool>& used, int hidden, int inter, uint32_t seed) {
  const size_t w13_size = size_t(2) * inter * hidden, w2_size = size_t(hidden) * inter;
  expert_weights w;
  w.w13.assign(used.size() * w13_size, bf16_all_ones);
  w.w2.assign(used.size() * w2_size, bf16_all_ones);
  for (size_t e = 0; e < used.size(); ++e) {
    if (!used[e]) continue;
    auto w13 = random_bf16(w13_size, seed + 2 * uint32_t(e), 1.0f / std::sqrt(float(hidden)));
    auto w2 = random_bf16(w2_size, seed + 2 * uint32_t(e) + 1, 1.0f / std::sqrt(float(inter)));
    std::copy(w13.bits.begin(), w13.bits.end(), w.w13.begin() + e * w13_size);
    std::copy(w2.bits.begin(), w2.bits.end(), w.w2.begin() + e * w2_size);
  }
  return w;
}

// out [tokens, hidden] in fp32: each local expert's pairs through the CPU ops.
std::vector<float> reference_moe(const std::vector<float>& x, int tokens, int hidden, const routing& r, int k,
                                 const expert_weights& w, int inter, int first_expert, int last_expert) {
  std::vector<float> y(size_t(tokens) * k * hidden, 0.0f);
  for (int e = first_expert; e < last_expert; ++e) {
    std::vector<int> pairs;
    for (size_t p = 0; p < r.chosen.size(); ++p)
      if (r.chosen[p] == e) pairs.push_back(int(p));
    if (pairs.empty()) continue;
    const int m = int(pairs.size()), local = e - first_expert;
    std::vector<float> xs(size_t(m) * hidden), h(size_t(m) * 2 * inter), act(size_t(m) * inter);
    std::vector<float> down(size_t(m) * hidden);
    for (int i = 0; i < m; ++i)
      std::copy_n(x.begin() + ptrdiff_t(pairs[size_t(i)] / k) * hidden, hidden, xs.begin() + ptrdiff_t(i) * hidden);
    cpu::matmul(xs.data(), m, {dtype::bf16, 2 * inter, hidden, w.w13.data() + size_t(local) * 2 * inter * hidden},
                h.data());
    for (int i = 0; i < m; ++i) {
      const float* hi = h.data() + size_t(i) * 2 * inter;
      cpu::swiglu(hi, hi + inter, inter, act.data() + size_t(i) * inter);
    }
    for (float& a : act) a = bf16_to_f32(f32_to_bf16(a));
    cpu::matmul(act.data(), m, {dtype::bf16, hidden, inter, w.w2.data() + size_t(local) * hidden * inter}, down.data());
    for (int i = 0; i < m; ++i) {
      const size_t p = size_t(pairs[size_t(i)]);
      for (int n = 0; n < hidden; ++n) y[p * hidden + n] = r.weights[p] * down[size_t(i) * hidden + n];
    }
  }
  std::vector<float> out(size_t(tokens) * hidden, 0.0f);
  for (int t = 0; t < tokens; ++t)
    for (int j = 0; j < k; ++j)
      for (int n = 0; n < hidden; ++n) out[size_t(t) * hidden + n] += y[(size_t(t) * k + j) * hidden + n];
  return out;
}

// How a test calls fused_moe: directly, replaying a captured CUDA graph, or directly with a
// cuBLAS handle (moe_grouped for batches of at least 32 pairs per local expert).
enum class path { direct, graph, cublas };

// fused_moe on device copies, with a workspace of all-ones bytes sized for `tokens`, run
// twice; the two outputs must match bit for bit.
std::vector<uint16_t> run_fused_moe(const std::vector<uint16_t>& x, int tokens, int hidden, const routing& r, int k,
                                    const expert_weights& w, int inter, int first_expert, int last_expert,
                                    path how = path::direct) {
  device_buffer<uint16_t> d_x(x), d_w13(w.w13), d_w2(w.w2);
  device_buffer<uint16_t> d_out(size_t(tokens) * hidden, bf16_nan);
  device_buffer<int> d_chosen(r.chosen);
  device_buffer<float> d_weights(r.weights);
  const size_t bytes = cuda::fused_moe_workspace_bytes(tokens, k, last_expert - first_expert, hidden, inter);
  device_buffer<uint8_t> d_workspace(bytes, 0xff);
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cudaGraphExec_t graph = nullptr;
  auto call = [&] {
    cuda::fused_moe(d_x.bf16(), tokens, hidden, d_chosen.get(), d_weights.get(), k, d_w13.bf16(), d_w2.bf16(), inter,
                    first_expert, last_expert, d_workspace.get(), d_out.bf16(), stream, cublas);
  };
  if (how == path::cublas) TROUPE_CUDA_CHECK(cublasCreate(&cublas));
  if (how == path::graph) {
    TROUPE_CUDA_CHECK(cudaStreamCreate(&stream));
    cudaGraph_t captured = nullptr;
    TROUPE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    call();
    TROUPE_CUDA_CHECK(cudaStreamEndCapture(stream, &captured));
    TROUPE_CUDA_CHECK(cudaGraphInstantiate(&graph, captured, 0));
    TROUPE_CUDA_CHECK(cudaGraphDestroy(captured));
  }
  std::vector<uint16_t> outs[2];
  for (auto& out : outs) {
    TROUPE_CUDA_CHECK(cudaMemset(d_out.get(), 0xff, sizeof(uint16_t) * size_t(tokens) * hidden));
    if (graph != nullptr)
      TROUPE_CUDA_CHECK(cudaGraphLaunch(graph, stream));
    else
      call();
    out = d_out.to_host();
  }
  BOOST_TEST((outs[0] == outs[1]), "a second run on the same workspace gives the same bits");
  if (graph != nullptr) TROUPE_CUDA_CHECK(cudaGraphExecDestroy(graph));
  if (stream != nullptr) TROUPE_CUDA_CHECK(cudaStreamDestroy(stream));
  if (cublas != nullptr) TROUPE_CUDA_CHECK(cublasDestroy(cublas));
  return outs[0];
}

}  // namespace

BOOST_AUTO_TEST_CASE(moe_align_groups_pairs_by_expert_stably) {
  struct shape {
    int tokens, experts, k, first, last;
  };
  uint32_t seed = 500;
  for (auto [tokens, experts, k, first, last] :
       {shape{1, 128, 8, 0, 128}, shape{5, 16, 4, 3, 11}, shape{300, 8, 2, 0, 8}, shape{1000, 16, 4, 3, 11},
        shape{4096, 128, 8, 0, 128}, shape{9000, 64, 8, 16, 48}})
    for (int tile_rows : {16, 64}) {
      const int local = last - first, pairs = tokens * k;
      const routing r = random_routing(tokens, experts, k, seed++);
      const plan_reference ref = reference_plan(r.chosen, first, local, tile_rows);
      const int max_tiles = cuda::moe_max_tiles(pairs, local, tile_rows);
      BOOST_REQUIRE_LE(ref.tiles.size() / 2, size_t(max_tiles));

      device_buffer<int> d_chosen(r.chosen), d_counts(size_t(local), -7);
      device_buffer<int> d_offsets(size_t(local) + 1, -7), d_tile_count(1, -7);
      device_buffer<int> d_sorted(size_t(max_tiles) * tile_rows, -7);
      device_buffer<int> d_tiles(size_t(max_tiles) * 2, -7);
      const cuda::moe_plan plan{tile_rows,         max_tiles,      d_counts.get(),
                                d_offsets.get(),   d_sorted.get(), reinterpret_cast<int2*>(d_tiles.get()),
                                d_tile_count.get()};
      cuda::moe_align(d_chosen.get(), pairs, first, local, plan, nullptr);

      std::ostringstream name;
      name << "moe_align tokens " << tokens << " k " << k << " experts [" << first << ", " << last << ") of " << experts
           << " tile " << tile_rows;
      BOOST_TEST_MESSAGE(name.str());
      BOOST_TEST(d_counts.to_host() == ref.counts, boost::test_tools::per_element());
      BOOST_TEST(d_offsets.to_host() == ref.offsets, boost::test_tools::per_element());
      BOOST_TEST(d_tile_count.to_host()[0] == int(ref.tiles.size() / 2), name.str());
      auto sorted = d_sorted.to_host();
      sorted.resize(ref.sorted_pairs.size());
      BOOST_TEST(sorted == ref.sorted_pairs, boost::test_tools::per_element());
      auto tiles = d_tiles.to_host();
      tiles.resize(ref.tiles.size());
      BOOST_TEST(tiles == ref.tiles, boost::test_tools::per_element());
    }
}

BOOST_AUTO_TEST_CASE(fused_moe_matches_cpu) {
  struct shape {
    int tokens, experts, k, hidden, inter, first, last;
    int hot = 0;        // tokens [1, 1 + hot) also choose expert `first`
    bool thin = false;  // expert last - 2 gets no pair, last - 1 one (both local)
  };
  uint32_t seed = 600;
  // moe_gemv (at most 64 pairs): the real shape at batch 1 and 8, hidden and inter
  // multiples of 16 but not of the k-chunk or the column block, an expert chosen by 18
  // tokens, a local range where token 0 has no local expert.
  // moe_align's 16-row tiles (65 pairs up to 16 per expert; moe_stream's one and two
  // n-tiles and half k-chunks), also on a local range where token 0 has no local expert,
  // and the real shape at batch 24. 64-row tiles, or with a handle moe_grouped (32 pairs per
  // expert and up: batched GEMMs over pieces of the mean count), on local ranges, with an
  // expert of no pair and one of a single pair, and with the real hidden and inter; an
  // expert chosen by 200 of 300 tokens is cut into several pieces. Qwen3.5-35B-A3B's shape
  // with its shared expert as a ninth pick (one more than moe_gemv's down kernel has warps),
  // at batch 1 and 7, and an expert every token picks.
  for (auto [tokens, experts, k, hidden, inter, first, last, hot, thin] :
       {shape{1, 128, 8, 2048, 768, 0, 128}, shape{8, 16, 8, 2048, 768, 0, 16}, shape{1, 257, 9, 2048, 512, 0, 257},
        shape{7, 257, 9, 2048, 512, 0, 257}, shape{300, 17, 9, 256, 128, 0, 17, 299}, shape{5, 16, 4, 80, 48, 0, 16},
        shape{20, 8, 2, 80, 48, 0, 8, 18}, shape{6, 16, 4, 80, 48, 3, 11}, shape{60, 16, 4, 80, 48, 0, 16},
        shape{24, 128, 8, 2048, 768, 0, 128}, shape{40, 16, 2, 128, 64, 3, 11}, shape{300, 8, 2, 256, 128, 0, 8},
        shape{300, 8, 2, 256, 128, 0, 8, 200}, shape{200, 16, 4, 96, 80, 3, 11},
        shape{600, 12, 2, 96, 80, 0, 9, 0, true}, shape{256, 8, 2, 2048, 768, 0, 8}}) {
    const int local = last - first;
    routing r = random_routing(tokens, experts, k, seed++);
    if (local < experts)  // token 0 keeps to experts of other devices
      for (int j = 0; j < k; ++j) r.chosen[size_t(j)] = j < first ? j : last + j;
    make_hot(r, k, first, hot);
    if (thin) {
      thin_out(r, k, last - 2, 0, last);
      thin_out(r, k, last - 1, 1, last);
    }
    std::vector<bool> used(size_t(local), false);
    for (int e : r.chosen)
      if (e >= first && e < last) used[size_t(e - first)] = true;
    const expert_weights w = random_experts(used, hidden, inter, seed++);
    const auto x = random_bf16(size_t(tokens) * hidden, seed++);

    const auto ref = reference_moe(x.values, tokens, hidden, r, k, w, inter, first, last);
    std::ostringstream name;
    name << "fused_moe tokens " << tokens << " k " << k << " experts [" << first << ", " << last << ") of " << experts
         << " hidden " << hidden << " inter " << inter;
    BOOST_TEST_MESSAGE(name.str());
    const auto direct = run_fused_moe(x.bits, tokens, hidden, r, k, w, inter, first, last);
    const auto out = to_f32(direct);
    expect_close(name.str(), out, ref, bf16_tolerance);
    if (local < experts)
      BOOST_TEST(std::all_of(out.begin(), out.begin() + hidden, [](float v) { return v == 0.0f; }),
                 name.str() << ": a token with no local expert gets zeros");
    const auto replayed = run_fused_moe(x.bits, tokens, hidden, r, k, w, inter, first, last, path::graph);
    BOOST_TEST((replayed == direct), name.str() << ": a captured graph gives the same bits");
    const auto with_cublas = to_f32(run_fused_moe(x.bits, tokens, hidden, r, k, w, inter, first, last, path::cublas));
    expect_close(name.str() + " with a cuBLAS handle", with_cublas, ref, bf16_tolerance);
    if (local < experts)
      BOOST_TEST(std::all_of(with_cublas.begin(), with_cublas.begin() + hidden, [](float v) { return v == 0.0f; }),
                 name.str() << " with a cuBLAS handle: a token with no local expert gets zeros");
  }
}

// The first n tokens of a batch, as their own batch.
struct batch_prefix {
  routing r;
  std::vector<uint16_t> x;
};

batch_prefix prefix(const routing& r, const std::vector<uint16_t>& x, int n, int k, int hidden) {
  batch_prefix b;
  b.r.chosen.assign(r.chosen.begin(), r.chosen.begin() + ptrdiff_t(n) * k);
  b.r.weights.assign(r.weights.begin(), r.weights.begin() + ptrdiff_t(n) * k);
  b.x.assign(x.begin(), x.begin() + ptrdiff_t(n) * hidden);
  return b;
}

// One token's output row of a batch's.
std::vector<uint16_t> row_of(const std::vector<uint16_t>& out, int t, int hidden) {
  return {out.begin() + ptrdiff_t(t) * hidden, out.begin() + ptrdiff_t(t + 1) * hidden};
}

// Token t's part of a batch's routing, as a batch of its own.
routing routing_of(const routing& batch, int t, int k) {
  return {{batch.chosen.begin() + t * k, batch.chosen.begin() + (t + 1) * k},
          {batch.weights.begin() + t * k, batch.weights.begin() + (t + 1) * k}};
}

BOOST_AUTO_TEST_CASE(fused_moe_token_is_bit_identical_alone_and_in_a_moe_gemv_batch) {
  // Alone (2 pairs) and in the first 20 tokens (40 pairs) the batch takes moe_gemv: the
  // same bits. The first 50 (100 pairs) take moe_align's 16-row tiles, all 65 (130 pairs) its
  // 64-row tiles, which sum k in other orders: within bf16 rounding.
  const int experts = 8, k = 2, hidden = 256, inter = 128, tokens = 65, t = 13;
  const routing batch = random_routing(tokens, experts, k, 700);
  const expert_weights w = random_experts(std::vector<bool>(size_t(experts), true), hidden, inter, 701);
  const auto x = random_bf16(size_t(tokens) * hidden, 702);

  const routing alone = routing_of(batch, t, k);
  const std::vector<uint16_t> x_alone = row_of(x.bits, t, hidden);
  const auto by_itself = run_fused_moe(x_alone, 1, hidden, alone, k, w, inter, 0, experts);
  for (int n : {20, 50, 65}) {
    const batch_prefix b = prefix(batch, x.bits, n, k, hidden);
    const auto in_batch = run_fused_moe(b.x, n, hidden, b.r, k, w, inter, 0, experts);
    if (n == 20)
      BOOST_TEST((row_of(in_batch, t, hidden) == by_itself), "token " << t << " alone and in a batch of " << n);
    else
      expect_close("token alone and in a batch of " + std::to_string(n), to_f32(row_of(in_batch, t, hidden)),
                   to_f32(by_itself), bf16_tolerance);
  }
  expect_close("fused_moe token alone vs the CPU", to_f32(by_itself),
               reference_moe(to_f32(x_alone), 1, hidden, alone, k, w, inter, 0, experts), bf16_tolerance);
}

BOOST_AUTO_TEST_CASE(fused_moe_with_cublas_keeps_a_token_within_bf16_of_alone) {
  // 600 tokens of top-2 over 8 experts make 150 pairs per expert: moe_grouped, whose
  // cuBLAS GEMMs choose their summation order by shape and round the projections and the
  // expert outputs to bf16. So the token's bits may differ from its bits alone (the
  // graph-safe path), but only by bf16 rounding.
  const int experts = 8, k = 2, hidden = 256, inter = 128, tokens = 600, t = 321;
  const routing batch = random_routing(tokens, experts, k, 800);
  const expert_weights w = random_experts(std::vector<bool>(size_t(experts), true), hidden, inter, 801);
  const auto x = random_bf16(size_t(tokens) * hidden, 802);

  const routing alone = routing_of(batch, t, k);
  const std::vector<uint16_t> x_alone = row_of(x.bits, t, hidden);
  const auto by_itself = run_fused_moe(x_alone, 1, hidden, alone, k, w, inter, 0, experts, path::cublas);
  const auto in_batch = run_fused_moe(x.bits, tokens, hidden, batch, k, w, inter, 0, experts, path::cublas);
  expect_close("fused_moe with a cuBLAS handle: token in a batch vs alone", to_f32(row_of(in_batch, t, hidden)),
               to_f32(by_itself), bf16_tolerance);
}
