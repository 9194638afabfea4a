// The Gated DeltaNet ops of Qwen3.5's linear-attention layers on the GPU against their CPU
// twins: causal_conv1d_silu and gated_delta_rule over sequences packed in one token buffer,
// each on its recurrent-state slot of a pool (slots out of order, some sequences starting
// afresh over a slot full of garbage, others continuing from a non-zero state), then decode
// steps after that prefill with a padding sequence among them, and a prompt in two pieces
// against one piece (the delta rule making its gates as linear_attention_block does); the
// delta rule's chunked kernel for prompts likewise;
// gated_rms_norm on its rows. Inputs are bf16 on the device; the CPU op gets the same
// bf16-rounded values in fp32. Outputs are poisoned with NaN first, and NaN never passes.
// Each check logs its worst error (--log_level=test_suite shows it).
#define BOOST_TEST_MODULE cuda_linear_attention
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/causal_conv1d.hpp"
#include "kernels/cpu/gated_delta_rule.hpp"
#include "kernels/cpu/gated_rms_norm.hpp"
#include "kernels/cuda/causal_conv1d.cuh"
#include "kernels/cuda/gated_delta_rule.cuh"
#include "kernels/cuda/gated_delta_rule_chunked.cuh"
#include "kernels/cuda/gated_rms_norm.cuh"
#include "tests/kernels/cuda_test_support.hpp"

using namespace troupe;
using namespace troupe::test;

namespace {

// A bf16 output is the fp32 result rounded once: off by at most half an ulp, 2^-8 of its
// size (8 significant bits); 2^-7 leaves as much again. The GPU's fp32 result differs from
// the CPU's only in summation order (and expf), some 1e-6 of the values summed, which near
// a zero output is not small against the output itself: 1e-3 of the outputs' RMS covers it
// many times over and is still far below what a wrong element (a wrong row, head, slot or
// token) is off by, about the RMS itself. States stay fp32 and get the same floor with
// 1e-3 of their own size.
constexpr double bf16_rel = 1.0 / 128, f32_rel = 1e-3, rms_floor = 1e-3;

double rms(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += double(x) * x;
  return std::sqrt(s / double(std::max<size_t>(v.size(), 1)));
}

// |out[i] - ref[i]| <= rel |ref[i]| + rms_floor * rms(ref) for every i; logs the worst.
void expect_within(const std::string& what, const std::vector<float>& out, const std::vector<float>& ref, double rel) {
  BOOST_REQUIRE_EQUAL(out.size(), ref.size());
  const double floor = rms_floor * rms(ref);
  double worst = 0, worst_excess = -1;
  size_t worst_at = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    BOOST_REQUIRE_MESSAGE(std::isfinite(out[i]), what << ": element " << i << " is " << out[i]);
    const double err = std::abs(double(out[i]) - ref[i]);
    worst = std::max(worst, err);
    const double excess = err - (rel * std::abs(double(ref[i])) + floor);
    if (excess > worst_excess) worst_excess = excess, worst_at = i;
  }
  BOOST_TEST_MESSAGE(what << ": compared " << ref.size() << " values, max abs error " << worst << " (floor " << floor
                          << ")");
  BOOST_TEST(worst_excess <= 0.0, what << ": element " << worst_at << " is " << out[worst_at] << ", want "
                                       << ref[worst_at] << " within " << rel << " of it + " << floor);
}

void expect_equal(const std::string& what, const std::vector<float>& a, const std::vector<float>& b) {
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  if (a.empty()) return;  // kernel 1 keeps no state
  BOOST_TEST(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0, what << ": not the same bits");
}

// One step's sequences on the host: tokens, slot and first position of each. A decode
// step has one token a sequence and no query_starts.
struct sequence_batch {
  std::vector<int> lens, slots, starts;
  bool decode = false;

  int seqs() const { return int(lens.size()); }
  int tokens() const {
    int n = 0;
    for (int l : lens) n += l;
    return n;
  }
  std::vector<int> query_starts() const {
    std::vector<int> q{0};
    for (int l : lens) q.push_back(q.back() + l);
    return q;
  }
};

// A batch's arrays on the device and the state_sequences pointing at them.
class device_batch {
 public:
  explicit device_batch(const sequence_batch& b) : query_starts_(b.query_starts()), starts_(b.starts), slots_(b.slots) {
    view.seqs = b.seqs();
    view.max_tokens = std::max(1, *std::max_element(b.lens.begin(), b.lens.end()));
    view.query_starts = b.decode ? nullptr : query_starts_.get();
    view.positions_start = starts_.get();
    view.slots = slots_.get();
  }

 private:
  device_buffer<int> query_starts_, starts_, slots_;

 public:
  cuda::state_sequences view;
};

// The prefill every test begins with: lengths around one and two delta-rule chunks, slots
// out of order in a pool of 11, the first and third sequences starting afresh.
const sequence_batch prefill{{1, 7, 64, 65, 300}, {6, 2, 9, 0, 4}, {0, 5, 0, 12, 3}};
constexpr int pool_slots = 11;

// A decode step of the same sequences in another order, and a padding sequence (slot -1).
sequence_batch decode_step(int step) {
  return {{1, 1, 1, 1, 1, 1}, {4, 0, 9, 2, 6, -1}, {303 + step, 77 + step, 64 + step, 12 + step, 1 + step, 0}, true};
}

// ---- causal_conv1d ----

struct conv_shape {
  int channels, kernel, x_stride;
};

// cpu::causal_conv1d_silu over each sequence on its slot of `pool` (zeroed first when it
// starts afresh); a padding sequence's rows are zeros.
std::vector<float> conv_on_cpu(const std::vector<float>& x, const conv_shape& c, const std::vector<float>& w,
                               const sequence_batch& b, std::vector<float>& pool) {
  const size_t slot_size = size_t(c.kernel - 1) * c.channels;
  std::vector<float> out(size_t(b.tokens()) * c.channels, 0.0f);
  for (int s = 0, row = 0; s < b.seqs(); row += b.lens[size_t(s)], ++s) {
    if (b.slots[size_t(s)] < 0) continue;
    float* state = pool.data() + size_t(b.slots[size_t(s)]) * slot_size;
    if (b.starts[size_t(s)] == 0) std::fill_n(state, slot_size, 0.0f);
    const int len = b.lens[size_t(s)];
    std::vector<float> rows(size_t(len) * c.channels);
    for (int t = 0; t < len; ++t)
      std::copy_n(x.data() + size_t(row + t) * c.x_stride, c.channels, rows.data() + size_t(t) * c.channels);
    cpu::causal_conv1d_silu(rows.data(), len, c.channels, w.data(), c.kernel, state,
                            out.data() + size_t(row) * c.channels);
  }
  return out;
}

std::vector<float> conv_on_gpu(const bf16_values& x, const conv_shape& c, device_buffer<float>& w,
                               const sequence_batch& b, device_buffer<float>& pool) {
  device_buffer<uint16_t> d_x(x.bits), d_out(size_t(b.tokens()) * c.channels, bf16_nan);
  device_batch seqs(b);
  cuda::causal_conv1d_silu(d_x.bf16(), c.x_stride, c.channels, w.get(), c.kernel, seqs.view, pool.get(), d_out.bf16(),
                           nullptr);
  return to_f32(d_out.to_host());
}

// ---- gated_delta_rule ----

// A step's delta-rule inputs: q, k and v in one row a token (as the conv leaves them), then
// the gates' inputs b and a (value_heads each) and a few elements of padding; the heads'
// decay rates and dt biases (head 0's deep in softplus's linear part); and the gates
// linear_attention_block's formula makes of them for the CPU op (log decays from about -5
// to -0.001, and far lower in head 0; beta in (0, 1)).
struct delta_inputs {
  int stride, gates_at;
  bf16_values qkv;
  std::vector<float> neg_decay_rate, dt_bias;
  std::vector<float> g, beta;
};

delta_inputs random_delta_inputs(const cuda::delta_rule_heads& d, int tokens, uint32_t seed) {
  const int heads = d.value_heads, gates_at = 2 * d.key_heads * d.key_dim + heads * d.value_dim;
  const int stride = gates_at + 2 * heads + 8;
  delta_inputs in{stride,
                  gates_at,
                  random_bf16(size_t(tokens) * stride, seed),
                  random_floats(size_t(heads), seed + 1),
                  random_floats(size_t(heads), seed + 2, 2.0f),
                  {},
                  {}};
  for (float& x : in.neg_decay_rate) x = -std::exp(0.75f * x - 1.0f);  // -exp(A_log), as the loader keeps it
  in.dt_bias[0] = 25.0f;
  for (int t = 0; t < tokens; ++t)
    for (int h = 0; h < heads; ++h) {
      const float* gates = in.qkv.values.data() + size_t(t) * stride + gates_at;
      const float x = gates[heads + h] + in.dt_bias[size_t(h)];
      in.g.push_back(in.neg_decay_rate[size_t(h)] * (x > 20.0f ? x : std::log1p(std::exp(x))));
      in.beta.push_back(1.0f / (1.0f + std::exp(-gates[h])));
    }
  return in;
}

size_t delta_slot_size(const cuda::delta_rule_heads& d) { return size_t(d.value_heads) * d.key_dim * d.value_dim; }

// The CPU op (recurrent, as decode runs it, or chunked by 64, as prefill does) over each
// sequence on its slot of `pool`; a padding sequence's rows are zeros.
std::vector<float> delta_rule_on_cpu(const delta_inputs& in, const cuda::delta_rule_heads& d, const sequence_batch& b,
                                     std::vector<float>& pool, bool chunked) {
  const int key_width = d.key_heads * d.key_dim, value_width = d.value_heads * d.value_dim;
  std::vector<float> out(size_t(b.tokens()) * value_width, 0.0f);
  for (int s = 0, row = 0; s < b.seqs(); row += b.lens[size_t(s)], ++s) {
    if (b.slots[size_t(s)] < 0) continue;
    float* state = pool.data() + size_t(b.slots[size_t(s)]) * delta_slot_size(d);
    if (b.starts[size_t(s)] == 0) std::fill_n(state, delta_slot_size(d), 0.0f);
    const int len = b.lens[size_t(s)];
    std::vector<float> q(size_t(len) * key_width), k(q.size()), v(size_t(len) * value_width);
    for (int t = 0; t < len; ++t) {
      const float* r = in.qkv.values.data() + size_t(row + t) * in.stride;
      std::copy_n(r, key_width, q.data() + size_t(t) * key_width);
      std::copy_n(r + key_width, key_width, k.data() + size_t(t) * key_width);
      std::copy_n(r + 2 * key_width, value_width, v.data() + size_t(t) * value_width);
    }
    const cpu::delta_rule_shape shape{len, d.key_heads, d.value_heads, d.key_dim, d.value_dim};
    const float* g = in.g.data() + size_t(row) * d.value_heads;
    const float* beta = in.beta.data() + size_t(row) * d.value_heads;
    float* o = out.data() + size_t(row) * value_width;
    if (chunked)
      cpu::gated_delta_rule_chunked(q.data(), k.data(), v.data(), g, beta, shape, 64, state, o);
    else
      cpu::gated_delta_rule_recurrent(q.data(), k.data(), v.data(), g, beta, shape, state, o);
  }
  return out;
}

// The GPU op over the batch: the recurrent kernel, or as a prompt step runs it, the chunked
// kernel for the sequences of a chunk or more and the recurrent one for the others.
std::vector<float> delta_rule_on_gpu(const delta_inputs& in, const cuda::delta_rule_heads& d, const sequence_batch& b,
                                     device_buffer<float>& pool, bool chunked = false) {
  const int key_width = d.key_heads * d.key_dim;
  device_buffer<uint16_t> d_qkv(in.qkv.bits), d_out(size_t(b.tokens()) * d.value_heads * d.value_dim, bf16_nan);
  device_buffer<float> d_rate(in.neg_decay_rate), d_bias(in.dt_bias);
  device_batch seqs(b);
  const __nv_bfloat16* gates = d_qkv.bf16() + in.gates_at;
  const cuda::delta_rule_inputs inputs{d_qkv.bf16(),
                                       d_qkv.bf16() + key_width,
                                       d_qkv.bf16() + 2 * key_width,
                                       in.stride,
                                       gates + d.value_heads,
                                       gates,
                                       in.stride,
                                       d_rate.get(),
                                       d_bias.get()};
  cuda::gated_delta_rule(inputs, d, seqs.view, pool.get(), d_out.bf16(), nullptr,
                         chunked ? cuda::delta_rule_chunked_from : 1 << 30);
  // The chunk sums' workspace poisoned: a sum the scan reads but nobody wrote shows as NaN.
  device_buffer<float> d_sums(cuda::gated_delta_rule_chunked_workspace_floats(b.tokens(), d), std::nanf(""));
  if (chunked) cuda::gated_delta_rule_chunked(inputs, d, seqs.view, pool.get(), d_sums.get(), d_out.bf16(), nullptr);
  return to_f32(d_out.to_host());
}

// Rows [first, first + n) of a [rows, width] matrix.
std::vector<float> row_range(const std::vector<float>& m, size_t width, size_t first, size_t n) {
  return {m.begin() + std::ptrdiff_t(first * width), m.begin() + std::ptrdiff_t((first + n) * width)};
}

}  // namespace

// Every shape: the 35B-A3B's (conv_dim 8192, kernel 4, in a row with other projections)
// and small ones with a partial channel block, kernel 1 (no state), and the widest kernel.
BOOST_AUTO_TEST_CASE(causal_conv1d_matches_cpu_over_packed_sequences_then_decode) {
  uint32_t seed = 100;
  for (conv_shape c : {conv_shape{8192, 4, 8192 + 4096 + 64}, conv_shape{37, 4, 37}, conv_shape{200, 3, 203},
                       conv_shape{130, 1, 130}, conv_shape{64, 8, 64}}) {
    std::ostringstream name;
    name << "conv channels " << c.channels << " kernel " << c.kernel;
    const size_t slot_size = size_t(c.kernel - 1) * c.channels;
    const auto w = random_floats(size_t(c.channels) * c.kernel, seed++, 0.5f);
    auto pool = random_floats(pool_slots * slot_size, seed++);  // garbage in the fresh slots
    device_buffer<float> d_w(w), d_pool(pool);

    auto x = random_bf16(size_t(prefill.tokens()) * c.x_stride, seed++);
    auto ref = conv_on_cpu(x.values, c, w, prefill, pool);
    expect_within(name.str() + " prefill out", conv_on_gpu(x, c, d_w, prefill, d_pool), ref, bf16_rel);
    expect_equal(name.str() + " prefill states", d_pool.to_host(), pool);  // bf16 values, moved

    for (int step = 0; step < 3; ++step) {
      const sequence_batch b = decode_step(step);
      x = random_bf16(size_t(b.tokens()) * c.x_stride, seed++);
      ref = conv_on_cpu(x.values, c, w, b, pool);
      expect_within(name.str() + " decode out", conv_on_gpu(x, c, d_w, b, d_pool), ref, bf16_rel);
      expect_equal(name.str() + " decode states", d_pool.to_host(), pool);
    }
  }
}

// A 300-token prompt in one call (slot 1) and in two, 130 then 170 tokens (slot 3): the
// same outputs and state to the bit.
BOOST_AUTO_TEST_CASE(causal_conv1d_prompt_in_two_pieces_is_one_piece) {
  const conv_shape c{8192, 4, 8192};
  const size_t slot_size = size_t(c.kernel - 1) * c.channels;
  device_buffer<float> d_w(random_floats(size_t(c.channels) * c.kernel, 200, 0.5f));
  device_buffer<float> d_pool(random_floats(4 * slot_size, 201));
  const auto prompt = random_bf16(300 * size_t(c.x_stride), 202);
  bf16_values both = prompt;  // the whole prompt, then its first 130 tokens
  both.bits.insert(both.bits.end(), prompt.bits.begin(), prompt.bits.begin() + 130 * c.x_stride);
  bf16_values rest;
  rest.bits.assign(prompt.bits.begin() + 130 * c.x_stride, prompt.bits.end());
  const auto whole = conv_on_gpu(both, c, d_w, {{300, 130}, {1, 3}, {0, 0}}, d_pool);
  auto pieces = row_range(whole, size_t(c.channels), 300, 130);
  const auto second = conv_on_gpu(rest, c, d_w, {{170}, {3}, {130}}, d_pool);
  pieces.insert(pieces.end(), second.begin(), second.end());
  expect_equal("conv out", pieces, row_range(whole, size_t(c.channels), 0, 300));
  const auto states = d_pool.to_host();
  expect_equal("conv state", row_range(states, slot_size, 3, 1), row_range(states, slot_size, 1, 1));
}

// The 35B-A3B's heads (16 key heads, 32 value heads, dims 128) and small ones: key_dim 160
// (more rows than 128 threads cover once, and chunks of 32 in the chunked kernel) with
// value_dim 40 (a partial slice of columns), key and value dims that differ under a group
// of 3, and an odd value_dim (odd rows: the chunked kernel loads without staging). The prefill's outputs, by the
// recurrent kernel and by the chunked one (1 to 300 tokens: less than a chunk, one, one and a token, several and a
// part), against both CPU forms, then three decode steps against the recurrent form.
BOOST_DATA_TEST_CASE(gated_delta_rule_matches_cpu_over_packed_sequences_then_decode,
                     boost::unit_test::data::make({false, true}), chunked) {
  uint32_t seed = 300;
  for (cuda::delta_rule_heads d : {cuda::delta_rule_heads{16, 32, 128, 128}, cuda::delta_rule_heads{1, 2, 160, 40},
                                   cuda::delta_rule_heads{2, 6, 48, 72}, cuda::delta_rule_heads{1, 3, 64, 41}}) {
    std::ostringstream name;
    name << (chunked ? "chunked " : "") << "delta rule heads " << d.key_heads << "/" << d.value_heads << " dims "
         << d.key_dim << "/" << d.value_dim;
    auto pool = random_floats(pool_slots * delta_slot_size(d), seed++, 0.5f);
    device_buffer<float> d_pool(pool);
    auto chunked_pool = pool;

    auto in = random_delta_inputs(d, prefill.tokens(), seed += 3);
    const auto out = delta_rule_on_gpu(in, d, prefill, d_pool, chunked);
    const auto ref = delta_rule_on_cpu(in, d, prefill, pool, false);
    expect_within(name.str() + " prefill out", out, ref, bf16_rel);
    expect_within(name.str() + " prefill out (chunked cpu)", out, delta_rule_on_cpu(in, d, prefill, chunked_pool, true),
                  bf16_rel);
    auto states = d_pool.to_host();
    expect_within(name.str() + " prefill states", states, pool, f32_rel);
    expect_within(name.str() + " prefill states (chunked cpu)", states, chunked_pool, f32_rel);

    for (int step = 0; step < 3; ++step) {
      const sequence_batch b = decode_step(step);
      in = random_delta_inputs(d, b.tokens(), seed += 3);
      expect_within(name.str() + " decode out", delta_rule_on_gpu(in, d, b, d_pool),
                    delta_rule_on_cpu(in, d, b, pool, false), bf16_rel);
      expect_within(name.str() + " decode states", d_pool.to_host(), pool, f32_rel);
    }
  }
}

// As for the conv: a 300-token prompt in one call and in two (130, 170) give the same
// outputs and state to the bit, the state in fp32 between the calls.
BOOST_AUTO_TEST_CASE(gated_delta_rule_prompt_in_two_pieces_is_one_piece) {
  const cuda::delta_rule_heads d{16, 32, 128, 128};
  const size_t slot_size = delta_slot_size(d), value_width = size_t(d.value_heads) * d.value_dim;
  device_buffer<float> d_pool(random_floats(4 * slot_size, 400, 0.5f));
  const auto prompt = random_delta_inputs(d, 300, 401);
  const size_t stride = size_t(prompt.stride);
  delta_inputs both = prompt, rest = prompt;  // the whole prompt, then its first 130 tokens; the other 170
  both.qkv.bits.insert(both.qkv.bits.end(), prompt.qkv.bits.begin(), prompt.qkv.bits.begin() + 130 * stride);
  rest.qkv.bits.assign(prompt.qkv.bits.begin() + 130 * stride, prompt.qkv.bits.end());
  const auto whole = delta_rule_on_gpu(both, d, {{300, 130}, {1, 3}, {0, 0}}, d_pool);
  auto pieces = row_range(whole, value_width, 300, 130);
  const auto second = delta_rule_on_gpu(rest, d, {{170}, {3}, {130}}, d_pool);
  pieces.insert(pieces.end(), second.begin(), second.end());
  expect_equal("delta rule out", pieces, row_range(whole, value_width, 0, 300));
  const auto states = d_pool.to_host();
  expect_equal("delta rule state", row_range(states, slot_size, 3, 1), row_range(states, slot_size, 1, 1));
}

// The chunked kernel over a prompt in two pieces (chunks from each piece's first token)
// and in one: the same within rounding, the state carried in fp32 between the pieces; and
// a padding sequence beside it gets zero rows and leaves its neighbours' slots alone.
BOOST_AUTO_TEST_CASE(gated_delta_rule_chunked_prompt_in_two_pieces_is_one_piece_within_rounding) {
  const cuda::delta_rule_heads d{16, 32, 128, 128};
  const size_t slot_size = delta_slot_size(d), value_width = size_t(d.value_heads) * d.value_dim;
  const auto start = random_floats(4 * slot_size, 410, 0.5f);
  device_buffer<float> d_pool(start);
  const auto prompt = random_delta_inputs(d, 300, 411);
  const size_t stride = size_t(prompt.stride);
  delta_inputs both = prompt, rest = prompt;  // the whole prompt, then a padding sequence of 90; the other 170
  both.qkv.bits.insert(both.qkv.bits.end(), prompt.qkv.bits.begin(), prompt.qkv.bits.begin() + 90 * stride);
  rest.qkv.bits.assign(prompt.qkv.bits.begin() + 130 * stride, prompt.qkv.bits.end());
  delta_inputs head = prompt;
  head.qkv.bits.resize(130 * stride);
  const auto whole = delta_rule_on_gpu(both, d, {{300, 90}, {1, -1}, {0, 0}}, d_pool, true);
  const auto padding = row_range(whole, value_width, 300, 90);
  BOOST_TEST(std::all_of(padding.begin(), padding.end(), [](float x) { return x == 0.0f; }));
  auto pieces = delta_rule_on_gpu(head, d, {{130}, {3}, {0}}, d_pool, true);
  const auto second = delta_rule_on_gpu(rest, d, {{170}, {3}, {130}}, d_pool, true);
  pieces.insert(pieces.end(), second.begin(), second.end());
  expect_within("chunked delta rule out", pieces, row_range(whole, value_width, 0, 300), bf16_rel);
  const auto states = d_pool.to_host();
  expect_within("chunked delta rule state", row_range(states, slot_size, 3, 1), row_range(states, slot_size, 1, 1),
                f32_rel);
  expect_equal("untouched slots", row_range(states, slot_size, 0, 1), row_range(start, slot_size, 0, 1));
  expect_equal("untouched slots", row_range(states, slot_size, 2, 1), row_range(start, slot_size, 2, 1));
}

// Rows of the 35B-A3B's heads (32 of 128) and odd ones; z in a wider row (a fused
// projection's), out in place of x and apart from it.
BOOST_AUTO_TEST_CASE(gated_rms_norm_matches_cpu) {
  struct shape {
    int tokens, heads, dim, z_pad;
  };
  uint32_t seed = 500;
  for (auto [tokens, heads, dim, z_pad] :
       {shape{1, 32, 128, 0}, shape{300, 32, 128, 96}, shape{37, 3, 40, 5}, shape{5, 2, 256, 0}, shape{9, 1, 7, 3}})
    for (bool in_place : {false, true}) {
      const int z_stride = heads * dim + z_pad;
      const size_t n = size_t(tokens) * heads * dim;
      const auto x = random_bf16(n, seed++, 2.0f);
      const auto z = random_bf16(size_t(tokens) * z_stride, seed++, 3.0f);
      const auto w = random_floats(size_t(dim), seed++);
      std::vector<float> z_rows(n), ref(n);
      for (int t = 0; t < tokens; ++t)
        std::copy_n(z.values.data() + size_t(t) * z_stride, heads * dim, z_rows.data() + size_t(t) * heads * dim);
      cpu::gated_rms_norm(x.values.data(), z_rows.data(), w.data(), 1e-6f, tokens * heads, dim, ref.data());

      device_buffer<uint16_t> d_x(x.bits), d_z(z.bits), d_out(n, bf16_nan);
      device_buffer<float> d_w(w);
      __nv_bfloat16* out = in_place ? d_x.bf16() : d_out.bf16();
      cuda::gated_rms_norm(d_x.bf16(), d_z.bf16(), z_stride, d_w.get(), 1e-6f, tokens, heads, dim, out, nullptr);
      std::ostringstream name;
      name << "gated_rms_norm tokens " << tokens << " heads " << heads << " dim " << dim
           << (in_place ? " in place" : "");
      expect_within(name.str(), to_f32((in_place ? d_x : d_out).to_host()), ref, bf16_rel);
    }
}
