// Every CUDA op against the CPU op on random inputs of several shapes, odd sizes included.
// Inputs are bf16 on the device; the CPU op gets the same bf16-rounded values in fp32.
// Outputs are poisoned with NaN before each run, and NaN never passes, so an element the
// kernel left unwritten fails. Each check logs its error (--log_level=test_suite shows it).
#define BOOST_TEST_MODULE cuda_ops
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <tuple>

#include "kernels/cpu/embedding.hpp"
#include "kernels/cpu/kv_cache_write.hpp"
#include "kernels/cpu/matmul.hpp"
#include "kernels/cpu/moe_routing.hpp"
#include "kernels/cpu/paged_attention.hpp"
#include "kernels/cpu/rms_norm.hpp"
#include "kernels/cpu/rope.hpp"
#include "kernels/cpu/shared_expert_add.hpp"
#include "kernels/cpu/swiglu.hpp"
#include "kernels/cuda/add_bias.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/fill_uniform.cuh"
#include "kernels/cuda/gather_rows.cuh"
#include "kernels/cuda/gemv.cuh"
#include "kernels/cuda/matmul.cuh"
#include "kernels/cuda/moe_routing.cuh"
#include "kernels/cuda/output_gate.cuh"
#include "kernels/cuda/paged_attention.cuh"
#include "kernels/cuda/qk_norm_rope.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/shared_expert_add.cuh"
#include "kernels/cuda/swiglu.cuh"
#include "tests/kernels/cuda_test_support.hpp"

using namespace troupe;
using namespace troupe::test;

BOOST_AUTO_TEST_CASE(rms_norm_with_residual_add_matches_cpu) {
  for (int dim : {1, 7, 128, 2048, 4099})
    for (bool with_add : {true, false}) {
      const int rows = 33;
      const size_t n = size_t(rows) * dim;
      auto residual = test::random_floats(n, 1 + dim, 2.0f);
      auto add = random_bf16(n, 2 + dim);
      auto w = test::random_floats(size_t(dim), 3 + dim);
      std::vector<float> ref_residual = residual, ref(n);
      if (with_add)
        for (size_t i = 0; i < n; ++i) ref_residual[i] += add.values[i];
      cpu::rms_norm(ref_residual.data(), w.data(), 1e-6f, rows, dim, ref.data());

      device_buffer<float> d_residual(residual), d_w(w);
      device_buffer<uint16_t> d_add(add.bits), d_out(n, bf16_nan);
      cuda::rms_norm(with_add ? d_add.bf16() : nullptr, d_residual.get(), d_w.get(), 1e-6f, rows, dim, d_out.bf16(),
                     nullptr);
      std::ostringstream shape;
      shape << "rms_norm rows " << rows << " dim " << dim << (with_add ? " +add" : "");
      expect_close(shape.str() + " out", to_f32(d_out.to_host()), ref, bf16_tolerance);
      expect_close(shape.str() + " residual", d_residual.to_host(), ref_residual, 1e-6);
    }
}

// The keys land in their pool slots (normed and rotated, the input rows untouched), the
// values are copied bit for bit, a padding token (slot -1) writes nothing, and every other
// slot keeps its poison; 2,053 tokens give each warp several rows, the last warp fewer.
// Partial rotary as Qwen3.5 has it (a quarter of 256 dims turn) and other fractions.
BOOST_AUTO_TEST_CASE(qk_norm_rope_and_kv_cache_write_match_cpu) {
  struct shape {
    int tokens, heads, kv_heads, head_dim;
    float theta;
    int rotary_dim = 0;
  };
  uint32_t seed = 100;
  for (auto [tokens, heads, kv_heads, hd, theta, rotary_dim] :
       {shape{1, 4, 2, 64, 10000.0f}, shape{7, 32, 4, 128, 1e6f}, shape{5, 3, 1, 2, 10000.0f},
        shape{9, 6, 2, 256, 1e6f}, shape{13, 5, 5, 18, 5e5f}, shape{2053, 32, 4, 128, 1e6f},
        shape{37, 16, 2, 256, 1e7f, 64}, shape{11, 4, 2, 128, 1e6f, 32}, shape{6, 3, 3, 18, 5e5f, 6}}) {
    const int row = kv_heads * hd, pool_slots = tokens + 5;
    auto q = random_bf16(size_t(tokens) * heads * hd, seed++, 2.0f);
    auto k = random_bf16(size_t(tokens) * row, seed++, 2.0f);
    auto v = random_bf16(size_t(tokens) * row, seed++, 2.0f);
    auto q_norm = test::random_floats(size_t(hd), seed++);
    auto k_norm = test::random_floats(size_t(hd), seed++);
    auto positions = random_ints(size_t(tokens), 40000, seed++);
    positions[0] = 0;
    std::vector<int> slots(static_cast<size_t>(pool_slots));
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), std::mt19937(seed++));
    slots.resize(size_t(tokens));
    if (tokens > 1) slots.back() = -1;
    std::vector<float> ref_q = q.values, ref_k = k.values;
    cpu::rms_norm(ref_q.data(), q_norm.data(), 1e-6f, tokens * heads, hd, ref_q.data());
    cpu::rms_norm(ref_k.data(), k_norm.data(), 1e-6f, tokens * kv_heads, hd, ref_k.data());
    cpu::rope(ref_q.data(), tokens, heads, hd, positions.data(), theta, rotary_dim);
    cpu::rope(ref_k.data(), tokens, kv_heads, hd, positions.data(), theta, rotary_dim);

    device_buffer<uint16_t> d_q(q.bits), d_k(k.bits), d_v(v.bits);
    device_buffer<uint16_t> d_keys(size_t(pool_slots) * row, bf16_nan), d_values(size_t(pool_slots) * row, bf16_nan);
    device_buffer<float> d_q_norm(q_norm), d_k_norm(k_norm);
    device_buffer<int> d_positions(positions), d_slots(slots);
    cuda::qk_norm_rope(d_q.bf16(), d_k.bf16(), d_q_norm.get(), d_k_norm.get(), 1e-6f, tokens, heads, kv_heads, hd,
                       heads * hd, row, d_positions.get(), theta, rotary_dim,
                       {d_v.bf16(), row, d_slots.get(), d_keys.bf16(), d_values.bf16()}, nullptr);
    std::ostringstream name;
    name << "qk_norm_rope tokens " << tokens << " heads " << heads << "/" << kv_heads << " head_dim " << hd
         << " rotary_dim " << rotary_dim;
    // In place, so nothing to poison: a row left unrotated is far off at these positions.
    expect_close(name.str() + " q", to_f32(d_q.to_host()), ref_q, bf16_tolerance);
    BOOST_TEST((d_k.to_host() == k.bits), name.str() << ": the input keys changed");
    const auto keys = d_keys.to_host(), values = d_values.to_host();
    std::vector<float> got_k, want_k;
    size_t stray = 0, value_mismatches = 0;
    for (int slot = 0; slot < pool_slots; ++slot) {
      const auto t = std::find(slots.begin(), slots.end(), slot) - slots.begin();
      for (int i = 0; i < row; ++i) {
        const size_t at = size_t(slot) * row + size_t(i);
        if (t == ptrdiff_t(slots.size())) {  // no token here: still poison
          stray += keys[at] != bf16_nan || values[at] != bf16_nan;
          continue;
        }
        got_k.push_back(bf16_to_f32(keys[at]));
        want_k.push_back(ref_k[size_t(t) * row + size_t(i)]);
        value_mismatches += values[at] != v.bits[size_t(t) * row + size_t(i)];
      }
    }
    expect_close(name.str() + " keys in the pool", got_k, want_k, bf16_tolerance);
    BOOST_TEST(value_mismatches == 0u, name.str() << ": values differ from their rows");
    BOOST_TEST(stray == 0u, name.str() << ": " << stray << " writes outside the tokens' slots");
  }
}

BOOST_AUTO_TEST_CASE(swiglu_matches_cpu) {
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(4097), int64_t(3) * 1024 * 1024 + 5}) {
    auto gate = random_bf16(size_t(n), uint32_t(n), 3.0f);
    auto up = random_bf16(size_t(n), uint32_t(n) + 1);
    std::vector<float> ref(static_cast<size_t>(n));
    cpu::swiglu(gate.values.data(), up.values.data(), n, ref.data());
    device_buffer<uint16_t> d_gate(gate.bits), d_up(up.bits), d_out(size_t(n), bf16_nan);
    cuda::swiglu(d_gate.bf16(), d_up.bf16(), n, d_out.bf16(), nullptr);
    expect_close("swiglu n " + std::to_string(n), to_f32(d_out.to_host()), ref, bf16_tolerance);
  }
}

BOOST_AUTO_TEST_CASE(embedding_matches_cpu) {
  const int vocab = 1001, tokens = 17;
  for (int dim : {1, 7, 2048, 4099}) {
    auto table = random_bf16(size_t(vocab) * dim, uint32_t(dim));
    auto ids = random_ints(size_t(tokens), vocab, uint32_t(dim) + 1);
    ids[0] = 0;
    ids[1] = vocab - 1;
    std::vector<float> ref(size_t(tokens) * dim);
    cpu::embedding({dtype::bf16, vocab, dim, table.bits.data()}, ids.data(), tokens, ref.data());
    device_buffer<uint16_t> d_table(table.bits);
    device_buffer<int> d_ids(ids);
    device_buffer<float> d_out(ref.size(), NAN);
    cuda::embedding(d_table.bf16(), vocab, dim, d_ids.get(), tokens, d_out.get(), nullptr);
    // A gather converts bf16 to fp32 exactly.
    expect_close("embedding dim " + std::to_string(dim), d_out.to_host(), ref, 1e-30);
  }
}

// Pools written by cpu::kv_cache_write into shuffled blocks, uploaded as bf16. Both paths:
// few (sequence, KV head) pairs and positions take the single-launch cluster kernel, here
// Qwen3-30B's 32/4 heads at head_dim 128 and 64 with one and two sequences of 1, 16, 17,
// 100, 513 and 3000 positions (warps and whole blocks without positions, a partial chunk,
// one to eight blocks a cluster, several chunks a warp), a group above 8 (40/4, 16/1,
// 48/4), block size 7, 16 pairs, and 4096 positions at 8 pairs (the bound). The rest take
// split_kernel and merge_kernel: 24 pairs, 32 sequences, 4097 positions at 12 pairs and
// 2049 at 16 (past the bound).
BOOST_AUTO_TEST_CASE(paged_attention_matches_cpu) {
  struct shape {
    int heads, kv_heads, head_dim, block_size;
    std::vector<int> lens;
  };
  std::vector<shape> shapes = {shape{32, 4, 128, 16, {1, 17, 300, 1000}}, shape{8, 8, 64, 32, {5, 257, 513}},
                               shape{6, 2, 64, 7, {3, 100, 600, 2}},      shape{16, 1, 128, 16, {1, 2000}},
                               shape{40, 4, 64, 16, {33, 1, 4097}},       shape{40, 4, 64, 16, {33, 4096}},
                               shape{48, 4, 128, 16, {700, 33}},          shape{32, 4, 64, 16, {1, 17, 300, 2049}}};
  for (int hd : {128, 64}) {
    for (int len : {1, 16, 17, 100, 513, 3000}) shapes.push_back({32, 4, hd, 16, {len}});
    for (const std::vector<int>& lens : std::vector<std::vector<int>>{{16, 17}, {513, 100}, {1, 3000}})
      shapes.push_back({32, 4, hd, 16, lens});
  }
  std::vector<int> many(32);
  for (size_t s = 0; s < many.size(); ++s) many[s] = 1 + int(s * 37 % 600);
  shapes.push_back({32, 4, 128, 16, many});
  // head_dim 256 (Qwen3.5-35B-A3B: 16/2 heads): the cluster kernel, a group above 8, and
  // 80 sequences (160 pairs) for the split kernels.
  shapes.push_back({16, 2, 256, 16, {1, 17, 300, 1000}});
  shapes.push_back({32, 2, 256, 16, {513, 100}});
  std::vector<int> eighty(80);
  for (size_t s = 0; s < eighty.size(); ++s) eighty[s] = 1 + int(s * 53 % 700);
  shapes.push_back({16, 2, 256, 16, eighty});
  uint32_t seed = 200;
  for (const auto& [heads, kv_heads, hd, block_size, lens] : shapes) {
    const int seqs = int(lens.size()), row = kv_heads * hd;
    const int max_len = *std::max_element(lens.begin(), lens.end());
    const int max_blocks = (max_len + block_size - 1) / block_size;
    int used_blocks = 0;
    for (int len : lens) used_blocks += (len + block_size - 1) / block_size;
    const int pool_blocks = used_blocks + 5;  // some blocks stay unused (and NaN)

    // Each sequence's blocks are a random share of the pool, so tables interleave.
    std::vector<int> pool_order(static_cast<size_t>(pool_blocks));
    std::iota(pool_order.begin(), pool_order.end(), 0);
    std::shuffle(pool_order.begin(), pool_order.end(), std::mt19937(seed++));
    std::vector<int> tables(size_t(seqs) * max_blocks, 0);
    int next_block = 0;
    for (int s = 0; s < seqs; ++s)
      for (int b = 0; b < (lens[size_t(s)] + block_size - 1) / block_size; ++b)
        tables[size_t(s) * max_blocks + b] = pool_order[size_t(next_block++)];
    const int tokens = std::accumulate(lens.begin(), lens.end(), 0);
    auto k = random_bf16(size_t(tokens) * row, seed++);
    auto v = random_bf16(size_t(tokens) * row, seed++);
    auto q = random_bf16(size_t(seqs) * heads * hd, seed++, 2.0f);

    const size_t pool_size = size_t(pool_blocks) * block_size * row;
    std::vector<float> key_pool(pool_size, NAN), value_pool(pool_size, NAN);
    std::vector<float> ref(q.values.size());
    for (int s = 0, first = 0; s < seqs; first += lens[size_t(s)], ++s) {
      const int* table = tables.data() + size_t(s) * max_blocks;
      cpu::kv_cache_write(k.values.data() + size_t(first) * row, v.values.data() + size_t(first) * row, lens[size_t(s)],
                          row, table, block_size, 0, key_pool.data(), value_pool.data());
      cpu::paged_attention(q.values.data() + size_t(s) * heads * hd, 1, heads, kv_heads, hd,
                           {key_pool.data(), value_pool.data(), table, block_size}, lens[size_t(s)] - 1,
                           ref.data() + size_t(s) * heads * hd);
    }

    std::vector<uint16_t> key_bits(pool_size), value_bits(pool_size);
    for (size_t i = 0; i < pool_size; ++i) {
      key_bits[i] = std::isnan(key_pool[i]) ? bf16_nan : f32_to_bf16(key_pool[i]);
      value_bits[i] = std::isnan(value_pool[i]) ? bf16_nan : f32_to_bf16(value_pool[i]);
    }
    device_buffer<uint16_t> d_q(q.bits), d_keys(key_bits), d_values(value_bits);
    device_buffer<uint16_t> d_out(q.bits.size(), bf16_nan);
    device_buffer<int> d_tables(tables), d_lens(lens);
    device_buffer<float> d_workspace(cuda::paged_attention_workspace_floats(seqs, heads, kv_heads, hd, max_len), NAN);
    cuda::paged_attention(
        d_q.bf16(), heads * hd, seqs, heads, kv_heads, hd,
        {d_keys.bf16(), d_values.bf16(), block_size, d_tables.get(), max_blocks, d_lens.get(), max_len},
        d_workspace.get(), d_out.bf16(), nullptr);

    std::ostringstream name;
    name << "heads " << heads << "/" << kv_heads << " head_dim " << hd << " block " << block_size << " lens";
    for (int len : lens) name << " " << len;
    expect_close("paged_attention " + name.str(), to_f32(d_out.to_host()), ref, bf16_tolerance);
  }
}

// A decode step's qk_norm_rope then paged_attention in one call: the attention against
// the CPU path (rms_norm per head, rope, kv_cache_write of the new key and value, then
// paged_attention; the normed q and k rounded to bf16 as the device stores them), and the
// pools against qk_norm_rope's on a copy of the inputs, to the bit: the new slots hold its
// bits and every other slot its old bits or poison. The fused cluster kernel: Qwen3-30B's
// 32/4 heads at head_dim 128 and 64 with one and two sequences of 1, 16, 17, 100, 513 and
// 3000 positions (the newest position in a first chunk, a later chunk, a later block), a
// group above 8 (48/4, 16/1), block size 7, 16 pairs, and a decode graph's padding row
// (slot -1: writes nothing; its output is not compared). The fallback (qk_norm_rope, then
// paged_attention's split kernels): 4097 positions, and 32 sequences with a padding row.
// Partial rotary (a quarter of the dims turn) in both, and head_dim 256 in both.
BOOST_AUTO_TEST_CASE(decode_attention_matches_cpu_and_qk_norm_rope) {
  struct shape {
    int heads, kv_heads, head_dim, block_size;
    std::vector<int> lens;
    bool padding = false;  // the last sequence: one position in block 0, slot -1
    int rotary_dim = 0;
  };
  std::vector<shape> shapes;
  for (int hd : {128, 64}) {
    for (int len : {1, 16, 17, 100, 513, 3000}) shapes.push_back({32, 4, hd, 16, {len}});
    for (const std::vector<int>& lens : std::vector<std::vector<int>>{{16, 17}, {513, 100}, {1, 3000}})
      shapes.push_back({32, 4, hd, 16, lens});
  }
  shapes.push_back({48, 4, 128, 16, {700, 33}});
  shapes.push_back({48, 4, 64, 7, {513}});
  shapes.push_back({16, 1, 128, 16, {1, 2000}});
  shapes.push_back({32, 4, 128, 7, {100, 1}});
  shapes.push_back({32, 4, 128, 16, {1, 17, 300, 1000}});
  shapes.push_back({32, 4, 128, 16, {300, 17, 1}, true});
  shapes.push_back({32, 4, 64, 16, {4097}});
  std::vector<int> many(32);
  for (size_t s = 0; s < many.size(); ++s) many[s] = 1 + int(s * 37 % 600);
  many.back() = 1;
  shapes.push_back({32, 4, 128, 16, many, true});
  shapes.push_back({32, 4, 128, 16, {1, 17, 300}, true, 32});
  shapes.push_back({16, 2, 64, 16, {4097}, false, 16});
  // Qwen3.5-35B-A3B's full-attention layers: head_dim 256, a quarter of it rotated.
  shapes.push_back({16, 2, 256, 16, {1, 17, 513}, false, 64});
  shapes.push_back({16, 2, 256, 16, {300, 17, 1}, true, 64});
  shapes.push_back({16, 2, 256, 16, {4097}, false, 64});
  const float eps = 1e-6f, theta = 1e6f;
  uint32_t seed = 700;
  for (const auto& [heads, kv_heads, hd, block_size, lens, padding, rotary_dim] : shapes) {
    const int seqs = int(lens.size()), real = padding ? seqs - 1 : seqs;
    const int row = kv_heads * hd, q_dim = heads * hd, qkv_dim = q_dim + 2 * row;
    const int max_len = *std::max_element(lens.begin(), lens.end());
    const int max_blocks = (max_len + block_size - 1) / block_size;
    int used_blocks = 0;
    for (int s = 0; s < real; ++s) used_blocks += (lens[size_t(s)] + block_size - 1) / block_size;
    const int pool_blocks = used_blocks + 5;  // some blocks stay unused (and NaN)

    // Each sequence's blocks are a random share of the pool, so tables interleave; the
    // step's token of sequence s sits at position lens[s] - 1.
    std::vector<int> pool_order(static_cast<size_t>(pool_blocks));
    std::iota(pool_order.begin(), pool_order.end(), 0);
    std::shuffle(pool_order.begin(), pool_order.end(), std::mt19937(seed++));
    std::vector<int> tables(size_t(seqs) * max_blocks, 0), slots(size_t(seqs), -1);
    std::vector<int> positions(static_cast<size_t>(seqs));
    int next_block = 0;
    for (int s = 0; s < seqs; ++s) {
      const int len = lens[size_t(s)];
      positions[size_t(s)] = len - 1;
      if (s >= real) continue;
      for (int b = 0; b < (len + block_size - 1) / block_size; ++b)
        tables[size_t(s) * max_blocks + b] = pool_order[size_t(next_block++)];
      slots[size_t(s)] = tables[size_t(s) * max_blocks + (len - 1) / block_size] * block_size + (len - 1) % block_size;
    }

    // Earlier steps' keys and values in the pools; the new slots hold poison.
    const size_t pool_size = size_t(pool_blocks) * block_size * row;
    std::vector<float> key_pool(pool_size, NAN), value_pool(pool_size, NAN);
    for (int s = 0; s < real; ++s) {
      const int old = lens[size_t(s)] - 1;
      auto k = random_bf16(size_t(old) * row, seed++), v = random_bf16(size_t(old) * row, seed++);
      cpu::kv_cache_write(k.values.data(), v.values.data(), old, row, tables.data() + size_t(s) * max_blocks,
                          block_size, 0, key_pool.data(), value_pool.data());
    }
    std::vector<uint16_t> key_bits(pool_size), value_bits(pool_size);
    for (size_t i = 0; i < pool_size; ++i) {
      key_bits[i] = std::isnan(key_pool[i]) ? bf16_nan : f32_to_bf16(key_pool[i]);
      value_bits[i] = std::isnan(value_pool[i]) ? bf16_nan : f32_to_bf16(value_pool[i]);
    }

    // The step's qkv rows through the CPU path.
    auto qkv = random_bf16(size_t(seqs) * qkv_dim, seed++, 2.0f);
    auto q_norm = test::random_floats(size_t(hd), seed++);
    auto k_norm = test::random_floats(size_t(hd), seed++);
    std::vector<float> q(size_t(seqs) * q_dim), k(size_t(seqs) * row), v(size_t(seqs) * row);
    for (int s = 0; s < seqs; ++s) {
      const float* at = qkv.values.data() + size_t(s) * qkv_dim;
      std::copy(at, at + q_dim, q.begin() + ptrdiff_t(s) * q_dim);
      std::copy(at + q_dim, at + q_dim + row, k.begin() + ptrdiff_t(s) * row);
      std::copy(at + q_dim + row, at + qkv_dim, v.begin() + ptrdiff_t(s) * row);
    }
    cpu::rms_norm(q.data(), q_norm.data(), eps, seqs * heads, hd, q.data());
    cpu::rms_norm(k.data(), k_norm.data(), eps, seqs * kv_heads, hd, k.data());
    cpu::rope(q.data(), seqs, heads, hd, positions.data(), theta, rotary_dim);
    cpu::rope(k.data(), seqs, kv_heads, hd, positions.data(), theta, rotary_dim);
    for (float& x : q) x = bf16_to_f32(f32_to_bf16(x));
    for (float& x : k) x = bf16_to_f32(f32_to_bf16(x));
    std::vector<float> ref(size_t(real) * q_dim);
    for (int s = 0; s < real; ++s) {
      const int* table = tables.data() + size_t(s) * max_blocks;
      cpu::kv_cache_write(k.data() + size_t(s) * row, v.data() + size_t(s) * row, 1, row, table, block_size,
                          lens[size_t(s)] - 1, key_pool.data(), value_pool.data());
      cpu::paged_attention(q.data() + size_t(s) * q_dim, 1, heads, kv_heads, hd,
                           {key_pool.data(), value_pool.data(), table, block_size}, lens[size_t(s)] - 1,
                           ref.data() + size_t(s) * q_dim);
    }

    device_buffer<uint16_t> d_qkv(qkv.bits), d_keys(key_bits), d_values(value_bits);
    device_buffer<uint16_t> d_qkv_copy(qkv.bits), d_keys_want(key_bits), d_values_want(value_bits);
    device_buffer<uint16_t> d_out(size_t(seqs) * q_dim, bf16_nan);
    device_buffer<float> d_q_norm(q_norm), d_k_norm(k_norm);
    device_buffer<float> d_workspace(cuda::paged_attention_workspace_floats(seqs, heads, kv_heads, hd, max_len), NAN);
    device_buffer<int> d_tables(tables), d_lens(lens), d_positions(positions), d_slots(slots);
    cuda::decode_attention(
        d_qkv.bf16(), d_qkv.bf16() + q_dim, d_q_norm.get(), d_k_norm.get(), eps, seqs, heads, kv_heads, hd, qkv_dim,
        qkv_dim, d_positions.get(), theta, rotary_dim,
        {d_qkv.bf16() + q_dim + row, qkv_dim, d_slots.get(), d_keys.bf16(), d_values.bf16()},
        {d_keys.bf16(), d_values.bf16(), block_size, d_tables.get(), max_blocks, d_lens.get(), max_len},
        d_workspace.get(), d_out.bf16(), nullptr);
    cuda::qk_norm_rope(
        d_qkv_copy.bf16(), d_qkv_copy.bf16() + q_dim, d_q_norm.get(), d_k_norm.get(), eps, seqs, heads, kv_heads, hd,
        qkv_dim, qkv_dim, d_positions.get(), theta, rotary_dim,
        {d_qkv_copy.bf16() + q_dim + row, qkv_dim, d_slots.get(), d_keys_want.bf16(), d_values_want.bf16()}, nullptr);

    std::ostringstream name;
    name << "decode_attention heads " << heads << "/" << kv_heads << " head_dim " << hd << " block " << block_size
         << " lens";
    for (int len : lens) name << " " << len;
    if (padding) name << " (the last padding)";
    if (rotary_dim > 0) name << " rotary_dim " << rotary_dim;
    auto out = to_f32(d_out.to_host());
    out.resize(ref.size());
    expect_close(name.str(), out, ref, bf16_tolerance);
    const auto keys = d_keys.to_host(), values = d_values.to_host();
    BOOST_TEST((keys == d_keys_want.to_host()), name.str() << ": the key pool differs from qk_norm_rope's");
    BOOST_TEST((values == d_values_want.to_host()), name.str() << ": the value pool differs from qk_norm_rope's");
    size_t stray = 0;
    for (size_t slot = 0; slot < size_t(pool_blocks) * block_size; ++slot) {
      if (std::find(slots.begin(), slots.end(), int(slot)) != slots.end()) continue;
      for (size_t i = slot * row; i < (slot + 1) * row; ++i)
        stray += keys[i] != key_bits[i] || values[i] != value_bits[i];
    }
    BOOST_TEST(stray == 0u, name.str() << ": " << stray << " writes outside the new slots");
  }
}

BOOST_AUTO_TEST_CASE(matmul_matches_cpu) {
  struct shape {
    int m, k, n;
  };
  cublasHandle_t handle;
  TROUPE_CUDA_CHECK(cublasCreate(&handle));
  uint32_t seed = 300;
  for (auto [m, k, n] :
       {shape{1, 2048, 768}, shape{7, 129, 33}, shape{64, 1024, 512}, shape{33, 5, 3}, shape{300, 768, 1001}})
    for (dtype y_type : {dtype::f32, dtype::bf16}) {
      auto x = random_bf16(size_t(m) * k, seed++);
      auto w = random_bf16(size_t(n) * k, seed++);
      std::vector<float> ref(size_t(m) * n);
      cpu::matmul(x.values.data(), m, {dtype::bf16, n, k, w.bits.data()}, ref.data());
      device_buffer<uint16_t> d_x(x.bits), d_w(w.bits);
      std::ostringstream name;
      name << "matmul m " << m << " k " << k << " n " << n << " -> " << dtype_name(y_type);
      if (y_type == dtype::f32) {
        device_buffer<float> d_y(ref.size(), NAN);
        cuda::matmul(handle, d_x.bf16(), m, k, d_w.bf16(), n, y_type, d_y.get());
        // Products of bf16 are exact in fp32: only the summation order differs.
        expect_close(name.str(), d_y.to_host(), ref, 1e-4);
      } else {
        device_buffer<uint16_t> d_y(ref.size(), bf16_nan);
        cuda::matmul(handle, d_x.bf16(), m, k, d_w.bf16(), n, y_type, d_y.get());
        expect_close(name.str(), to_f32(d_y.to_host()), ref, bf16_tolerance);
      }
    }
  TROUPE_CUDA_CHECK(cublasDestroy(handle));
}

// The decode shapes of Qwen3-30B-A3B (qkv, o, router, lm_head) and odd ones. matmul must
// take the gemv path for these (same bits), and a row's bits must not depend on how many
// rows share the call.
BOOST_AUTO_TEST_CASE(gemv_matches_cpu) {
  struct shape {
    int n, k;
    bool batched;  // m = 1 only for lm_head: its CPU reference is slow enough
  };
  cublasHandle_t handle;
  TROUPE_CUDA_CHECK(cublasCreate(&handle));
  uint32_t seed = 350;
  for (auto [n, k, batched] : {shape{5120, 2048, true}, shape{2048, 4096, true}, shape{128, 2048, true},
                               shape{151936, 2048, false}, shape{33, 136, true}, shape{1000, 8, true}}) {
    const std::vector<int> ms = batched ? std::vector<int>{1, 2, 3, 5, 8} : std::vector<int>{1};
    auto x = random_bf16(size_t(cuda::gemv_max_rows) * k, seed++);
    auto w = random_bf16(size_t(n) * k, seed++);
    std::vector<float> ref(size_t(ms.back()) * n);
    cpu::matmul(x.values.data(), ms.back(), {dtype::bf16, n, k, w.bits.data()}, ref.data());
    device_buffer<uint16_t> d_x(x.bits), d_w(w.bits);
    for (dtype y_type : {dtype::f32, dtype::bf16}) {
      // y of m rows of x from first_row on, through gemv or matmul, widened to fp32.
      auto run = [&](int first_row, int m, bool through_matmul) {
        const __nv_bfloat16* rows = d_x.bf16() + size_t(first_row) * k;
        auto call = [&](void* y) {
          if (through_matmul)
            cuda::matmul(handle, rows, m, k, d_w.bf16(), n, y_type, y);
          else
            cuda::gemv(rows, m, k, d_w.bf16(), n, y_type, y, nullptr);
        };
        if (y_type == dtype::f32) {
          device_buffer<float> d_y(size_t(m) * n, NAN);
          call(d_y.get());
          return d_y.to_host();
        }
        device_buffer<uint16_t> d_y(size_t(m) * n, bf16_nan);
        call(d_y.get());
        return to_f32(d_y.to_host());
      };
      auto same_bits = [](const float* a, const float* b, int count) {
        return std::memcmp(a, b, size_t(count) * sizeof(float)) == 0;
      };
      std::ostringstream shape_name;
      shape_name << " k " << k << " n " << n << " -> " << dtype_name(y_type);
      for (int m : ms) {
        const std::string name = "gemv m " + std::to_string(m) + shape_name.str();
        const auto out = run(0, m, false);
        // Products of bf16 are exact in fp32: only the summation order differs.
        expect_close(name, out, {ref.begin(), ref.begin() + ptrdiff_t(m) * n},
                     y_type == dtype::f32 ? 1e-4 : bf16_tolerance);
        BOOST_TEST(same_bits(run(0, m, true).data(), out.data(), m * n), name << ": matmul differs");
      }
      const auto four = run(0, 4, false);
      for (int r = 0; r < 4; ++r)
        BOOST_TEST(same_bits(run(r, 1, false).data(), four.data() + size_t(r) * n, n),
                   "gemv row " << r << " of m 4" << shape_name.str() << " differs from m 1");
    }
  }
  TROUPE_CUDA_CHECK(cublasDestroy(handle));
}

// The norm a decode step fuses into its matmuls: the same bits as rms_norm then gemv, in
// y, in the residual it leaves and in the normed rows it keeps.
BOOST_AUTO_TEST_CASE(gemv_normed_is_rms_norm_then_gemv_to_the_bit) {
  struct shape {
    int m, k, n;
  };
  uint32_t seed = 380;
  for (auto [m, k, n] : {shape{1, 2048, 5120}, shape{3, 64, 33}, shape{8, 4104, 100}, shape{5, 2048, 128}})
    for (bool with_add : {true, false}) {
      const size_t count = size_t(m) * k;
      auto residual = test::random_floats(count, seed++, 2.0f);
      auto add = random_bf16(count, seed++);
      auto weight = test::random_floats(size_t(k), seed++);
      auto w = random_bf16(size_t(n) * k, seed++);
      device_buffer<float> d_residual(residual), d_weight(weight), d_residual_out(count, NAN);
      device_buffer<uint16_t> d_add(add.bits), d_w(w.bits), d_normed(count, bf16_nan), d_kept(count, bf16_nan);
      device_buffer<float> d_y(size_t(m) * n, NAN), d_y_fused(size_t(m) * n, NAN);
      const __nv_bfloat16* add_or_null = with_add ? d_add.bf16() : nullptr;
      const cuda::gemv_norm in{add_or_null, d_residual.get(),     d_weight.get(),
                               1e-6f,       d_residual_out.get(), d_kept.bf16()};
      cuda::gemv_normed(in, m, k, d_w.bf16(), n, dtype::f32, d_y_fused.get(), nullptr);
      cuda::rms_norm(add_or_null, d_residual.get(), d_weight.get(), 1e-6f, m, k, d_normed.bf16(), nullptr);
      cuda::gemv(d_normed.bf16(), m, k, d_w.bf16(), n, dtype::f32, d_y.get(), nullptr);
      BOOST_TEST_CONTEXT("m " << m << " k " << k << " n " << n << (with_add ? " +add" : "")) {
        BOOST_TEST((d_y_fused.to_host() == d_y.to_host()), "y");
        BOOST_TEST((d_residual_out.to_host() == d_residual.to_host()), "residual");
        BOOST_TEST((d_kept.to_host() == d_normed.to_host()), "normed rows");
      }
    }
}

BOOST_AUTO_TEST_CASE(route_top_k_matches_cpu) {
  struct shape {
    int tokens, experts, k;
    bool normalize, shared_expert;
  };
  uint32_t seed = 400;
  for (auto [tokens, experts, k, normalize, shared] :
       {shape{1, 8, 2, true, false}, shape{33, 128, 8, true, false}, shape{5, 60, 4, false, false},
        shape{17, 512, 10, true, false}, shape{3, 7, 7, false, false}, shape{4, 64, 32, true, false},
        shape{1, 256, 8, true, true}, shape{9, 60, 5, false, true}, shape{4, 64, 31, true, true}}) {
    // Router logits come from an fp32 matmul; random floats are never tied. With a shared
    // expert each row has its gate's logit last.
    const int columns = experts + int(shared), picks = k + int(shared);
    auto logits = test::random_floats(size_t(tokens) * columns, seed++, 2.0f);
    std::vector<int> ref_chosen(size_t(tokens) * picks);
    std::vector<float> ref_weights(ref_chosen.size());
    for (int t = 0; t < tokens; ++t) {
      const float* row = logits.data() + size_t(t) * columns;
      cpu::route_top_k(row, experts, k, normalize, ref_chosen.data() + size_t(t) * picks,
                       ref_weights.data() + size_t(t) * picks);
      if (shared) {
        ref_chosen[size_t(t) * picks + k] = experts;
        ref_weights[size_t(t) * picks + k] = 1.0f / (1.0f + std::exp(-row[experts]));
      }
    }
    device_buffer<float> d_logits(logits), d_weights(ref_weights.size(), NAN);
    device_buffer<int> d_chosen(ref_chosen.size(), -1);
    cuda::route_top_k(d_logits.get(), tokens, experts, k, normalize, shared, d_chosen.get(), d_weights.get(), nullptr);
    std::ostringstream name;
    name << "route_top_k tokens " << tokens << " experts " << experts << " k " << k << (normalize ? " normalized" : "")
         << (shared ? " shared expert" : "");
    const auto chosen = d_chosen.to_host();
    BOOST_TEST(chosen == ref_chosen, boost::test_tools::per_element());
    expect_close(name.str(), d_weights.to_host(), ref_weights, f32_tolerance);
  }
}

BOOST_AUTO_TEST_CASE(add_bias_matches_cpu) {
  uint32_t seed = 500;
  for (auto [rows, cols, stride] : {std::tuple{1, 7, 7}, std::tuple{33, 128, 160}, std::tuple{5, 4096, 5120}}) {
    auto y = random_bf16(size_t(rows) * stride, seed++);
    const auto bias = test::random_floats(size_t(cols), seed++);
    std::vector<float> ref = y.values;
    for (int r = 0; r < rows; ++r)
      for (int i = 0; i < cols; ++i) ref[size_t(r) * stride + i] += bias[size_t(i)];
    device_buffer<uint16_t> d_y(y.bits);
    device_buffer<float> d_bias(bias);
    cuda::add_bias(d_y.bf16(), rows, cols, stride, d_bias.get(), nullptr);
    std::ostringstream name;
    name << "add_bias rows " << rows << " cols " << cols << " stride " << stride;
    // Columns past `cols` are left as they were: the reference keeps them too.
    expect_close(name.str(), to_f32(d_y.to_host()), ref, bf16_tolerance);
  }
}

// Qwen3.5's attention output gate, as layers.cpp applies it on the CPU: rows of the
// 35B-A3B's width (16 heads of 256) with the gate in a wider fused row, and odd shapes.
BOOST_AUTO_TEST_CASE(output_gate_matches_cpu) {
  uint32_t seed = 550;
  for (auto [tokens, width, stride] :
       {std::tuple{1, 4096, 4096 + 1024}, std::tuple{37, 4096, 9216}, std::tuple{3, 7, 7}, std::tuple{5, 1500, 1501}}) {
    const auto x = random_bf16(size_t(tokens) * width, seed++, 2.0f);
    const auto gate = random_bf16(size_t(tokens) * stride, seed++, 3.0f);
    std::vector<float> ref = x.values;
    for (int t = 0; t < tokens; ++t)
      for (int i = 0; i < width; ++i)
        ref[size_t(t) * width + i] *= 1.0f / (1.0f + std::exp(-gate.values[size_t(t) * stride + i]));
    device_buffer<uint16_t> d_x(x.bits), d_gate(gate.bits);
    cuda::output_gate(d_x.bf16(), d_gate.bf16(), stride, tokens, width, nullptr);
    std::ostringstream name;
    name << "output_gate tokens " << tokens << " width " << width << " stride " << stride;
    expect_close(name.str(), to_f32(d_x.to_host()), ref, bf16_tolerance);
  }
}

// The routed sum in bf16 here, in fp32 on the CPU.
BOOST_AUTO_TEST_CASE(shared_expert_add_matches_cpu) {
  uint32_t seed = 560;
  for (auto [tokens, width] : {std::tuple{1, 2048}, std::tuple{37, 4096}, std::tuple{3, 7}, std::tuple{5, 1500}}) {
    const auto out = random_bf16(size_t(tokens) * width, seed++, 2.0f);
    const auto expert = random_bf16(size_t(tokens) * width, seed++, 2.0f);
    const auto gate = test::random_floats(size_t(tokens), seed++, 4.0f);
    std::vector<float> ref = out.values;
    cpu::shared_expert_add(ref.data(), expert.values.data(), gate.data(), tokens, width);
    device_buffer<uint16_t> d_out(out.bits), d_expert(expert.bits);
    device_buffer<float> d_gate(gate);
    cuda::shared_expert_add(d_out.bf16(), d_expert.bf16(), d_gate.get(), tokens, width, nullptr);
    std::ostringstream name;
    name << "shared_expert_add tokens " << tokens << " width " << width;
    expect_close(name.str(), to_f32(d_out.to_host()), ref, bf16_tolerance);
  }
}

BOOST_AUTO_TEST_CASE(gather_rows_copies_the_named_rows) {
  const int dim = 77, rows = 40;
  auto x = random_bf16(size_t(rows) * dim, 600);
  const std::vector<int> pick{39, 0, 7, 7, 21};
  device_buffer<uint16_t> d_x(x.bits), d_out(pick.size() * dim, bf16_nan);
  device_buffer<int> d_pick(pick);
  cuda::gather_rows(d_x.bf16(), dim, d_pick.get(), int(pick.size()), d_out.bf16(), nullptr);
  const auto out = d_out.to_host();
  for (size_t i = 0; i < pick.size(); ++i)
    BOOST_TEST(std::equal(out.begin() + long(i * dim), out.begin() + long((i + 1) * dim),
                          x.bits.begin() + long(pick[i]) * dim));
}

BOOST_AUTO_TEST_CASE(fill_uniform_matches_its_host_formula) {
  // A part of a tensor from its element `first` holds the whole tensor's values there.
  for (auto [first, n] : {std::pair<int64_t, int64_t>{0, 1}, {0, 1000}, {0, int64_t(3) << 22}, {12345, 1000}}) {
    const float bound = 0.02f;
    device_buffer<uint16_t> d(size_t(n), bf16_nan);
    cuda::fill_uniform(d.bf16(), first, n, bound, 42, nullptr);
    const auto out = d.to_host();
    size_t mismatches = 0;
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      mismatches += out[size_t(i)] != f32_to_bf16(cuda::uniform_value(first + i, bound, 42));
      sum += bf16_to_f32(out[size_t(i)]);
    }
    BOOST_TEST(mismatches == 0u);
    if (n > 1000000) BOOST_TEST(std::abs(sum / double(n)) < bound * 1e-2);  // centred
  }
}
