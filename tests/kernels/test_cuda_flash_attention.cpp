// Prefill attention on the GPU against cpu::paged_attention per sequence: random queries,
// keys and values, block tables that interleave the sequences over a shuffled pool, and
// NaN in every pool slot no sequence owns, so a read past a sequence's positions fails.
// The output is poisoned with NaN, so a row the kernel left unwritten fails too.
#define BOOST_TEST_MODULE cuda_flash_attention
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <sstream>
#include <vector>

#include "kernels/cpu/paged_attention.hpp"
#include "kernels/cuda/flash_attention.cuh"
#include "tests/kernels/cuda_test_support.hpp"

using namespace troupe;
using namespace troupe::test;

BOOST_AUTO_TEST_CASE(flash_attention_matches_cpu) {
  struct sequence {
    int new_tokens, start;
  };
  struct shape {
    int heads, kv_heads, head_dim, block_size;
    std::vector<sequence> seqs;
  };
  uint32_t seed = 500;
  for (const auto& [heads, kv_heads, hd, block_size, seqs] :
       {shape{32, 4, 128, 32, {{1000, 0}}}, shape{8, 8, 64, 7, {{1, 0}, {77, 35}, {130, 300}}},
        shape{6, 2, 128, 16, {{64, 5}}}, shape{4, 1, 64, 128, {{200, 0}, {3, 61}}},
        shape{16, 2, 256, 16, {{600, 0}, {33, 100}}}}) {
    const int count = int(seqs.size()), row = kv_heads * hd;
    std::vector<int> query_starts{0}, starts, lens;
    int max_query_len = 0, used_blocks = 0;
    for (auto [n, start] : seqs) {
      query_starts.push_back(query_starts.back() + n);
      starts.push_back(start);
      lens.push_back(start + n);
      max_query_len = std::max(max_query_len, n);
      used_blocks += (start + n + block_size - 1) / block_size;
    }
    const int tokens = query_starts.back();
    const int max_len = *std::max_element(lens.begin(), lens.end());
    const int max_blocks = (max_len + block_size - 1) / block_size;
    const int pool_blocks = used_blocks + 5;

    std::vector<int> pool_order(static_cast<size_t>(pool_blocks));
    std::iota(pool_order.begin(), pool_order.end(), 0);
    std::shuffle(pool_order.begin(), pool_order.end(), std::mt19937(seed++));
    std::vector<int> tables(size_t(count) * max_blocks, 0);
    std::vector<bool> owned(size_t(pool_blocks) * block_size, false);
    for (int s = 0, next_block = 0; s < count; ++s) {
      for (int b = 0; b < (lens[size_t(s)] + block_size - 1) / block_size; ++b)
        tables[size_t(s) * max_blocks + b] = pool_order[size_t(next_block++)];
      for (int p = 0; p < lens[size_t(s)]; ++p)
        owned[size_t(tables[size_t(s) * max_blocks + p / block_size]) * block_size + p % block_size] = true;
    }

    const size_t pool_size = size_t(pool_blocks) * block_size * row;
    auto keys = random_bf16(pool_size, seed++);
    auto values = random_bf16(pool_size, seed++);
    for (size_t slot = 0; slot < owned.size(); ++slot)
      if (!owned[slot])
        for (size_t i = slot * row; i < (slot + 1) * row; ++i) {
          keys.bits[i] = values.bits[i] = bf16_nan;
          keys.values[i] = values.values[i] = NAN;
        }
    auto q = random_bf16(size_t(tokens) * heads * hd, seed++, 2.0f);

    std::vector<float> ref(q.values.size());
    for (int s = 0; s < count; ++s) {
      const size_t at = size_t(query_starts[size_t(s)]) * heads * hd;
      cpu::paged_attention(
          q.values.data() + at, seqs[size_t(s)].new_tokens, heads, kv_heads, hd,
          {keys.values.data(), values.values.data(), tables.data() + size_t(s) * max_blocks, block_size},
          starts[size_t(s)], ref.data() + at);
    }

    device_buffer<uint16_t> d_q(q.bits), d_keys(keys.bits), d_values(values.bits);
    device_buffer<uint16_t> d_out(q.bits.size(), bf16_nan);
    device_buffer<int> d_tables(tables), d_query_starts(query_starts), d_starts(starts);
    cuda::flash_attention(d_q.bf16(), heads, kv_heads, hd,
                          {d_keys.bf16(), d_values.bf16(), block_size, d_tables.get(), max_blocks, count,
                           d_query_starts.get(), d_starts.get(), max_query_len},
                          d_out.bf16(), nullptr);

    std::ostringstream name;
    name << "flash_attention heads " << heads << "/" << kv_heads << " head_dim " << hd << " block " << block_size
         << " new tokens (start)";
    for (auto [n, start] : seqs) name << " " << n << " (" << start << ")";
    expect_close(name.str(), to_f32(d_out.to_host()), ref, bf16_tolerance);
  }
}
