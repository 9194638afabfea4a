#include "kernels/cuda/flash_attention.cuh"

#include <cmath>
#include <cstdint>

#include "base/check.hpp"
#include "kernels/cuda/async_copy.cuh"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/mma_bf16.cuh"

namespace troupe::cuda {

static constexpr int threads = 128;
static constexpr int warps = threads / 32;
static constexpr int tile_rows = 16 * warps;  // query rows per block, 16 per warp
static constexpr int tile_keys = 64;          // key positions per step
static constexpr float log2e = 1.44269504f;

// One block's shared memory, offsets in bytes: the query tile, then K, V, K, V (two
// stages). Rows are padded by 16 bytes, so the eight rows one ldmatrix reads start in
// different banks.
template <int head_dim>
struct smem_layout {
  static constexpr int ld = head_dim + 8;  // bf16
  static constexpr size_t tile = size_t(tile_keys) * ld * sizeof(__nv_bfloat16);
  static constexpr size_t q = 0;
  static constexpr size_t kv = tile;
  static constexpr size_t bytes = kv + 4 * tile;
  static_assert(tile_rows == tile_keys, "the query tile has a key tile's size");
};

// Keys and values of positions first_key..first_key + tile_keys - 1 through the block
// table, zeros past last_key: 16 bytes a copy, a row's copies on consecutive threads.
template <int head_dim>
static __device__ void load_kv_tile(const flash_attention_batch& batch, const int* table, int row, int kvh,
                                    int first_key, int last_key, __nv_bfloat16* k_s, __nv_bfloat16* v_s) {
  constexpr int chunks = head_dim / 8, ld = smem_layout<head_dim>::ld;
  const int c = threadIdx.x % chunks;
#pragma unroll
  for (int pass = 0; pass < tile_keys * chunks / threads; ++pass) {
    const int j = threadIdx.x / chunks + pass * (threads / chunks), p = first_key + j;
    const bool valid = p <= last_key;
    size_t at = size_t(kvh) * head_dim + c * 8;
    if (valid) at += (size_t(table[p / batch.block_size]) * batch.block_size + p % batch.block_size) * row;
    copy_16(k_s + j * ld + c * 8, valid ? batch.keys + at : nullptr);
    copy_16(v_s + j * ld + c * 8, valid ? batch.values + at : nullptr);
  }
}

// Four 8x8 bf16 matrices from shared memory, lane l giving the address of row l % 8 of
// matrix l / 8; .trans hands each thread a column pair instead of a row pair.
static __device__ void load_matrices(uint32_t (&r)[4], const __nv_bfloat16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(unsigned(__cvta_generic_to_shared(p))));
}

static __device__ void load_matrices_trans(uint32_t (&r)[4], const __nv_bfloat16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(unsigned(__cvta_generic_to_shared(p))));
}

// Block (head, query tile, sequence), warp w owning query rows 16w..16w+15 of the tile,
// FlashAttention-2 style on m16n8k16 products: the query rows stay in A fragments, the
// scores S = Q K^T in accumulators, whose layout is the A layout of P V, so the
// probabilities never leave registers; O stays in accumulators. Lane (g = lane / 4,
// t = lane % 4) holds rows g and g + 8, columns 2t and 2t + 1 of each 8-wide n-tile.
template <int head_dim>
static __global__ void __launch_bounds__(threads, 2)
    flash_attention_kernel(const __nv_bfloat16* q, int heads, int kv_heads, flash_attention_batch batch,
                           __nv_bfloat16* out) {
  using layout = smem_layout<head_dim>;
  constexpr int ld = layout::ld, chunks = head_dim / 8, k_steps = head_dim / 16, d_tiles = head_dim / 8;
  constexpr int key_ntiles = tile_keys / 8;
  extern __shared__ __align__(128) unsigned char smem[];

  const int h = blockIdx.x, s = blockIdx.z;
  const int t0 = int(gridDim.y - 1 - blockIdx.y) * tile_rows;  // the longest tiles first
  const int first = batch.query_starts[s], n = batch.query_starts[s + 1] - first;
  if (t0 >= n) return;
  const int start = batch.positions_start[s];
  const int last_key = start + min(n, t0 + tile_rows) - 1;
  const int key_tiles = last_key / tile_keys + 1;
  const int kvh = h / (heads / kv_heads), row = kv_heads * head_dim;
  const int* table = batch.block_tables + size_t(s) * batch.max_blocks;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

  __nv_bfloat16* q_s = reinterpret_cast<__nv_bfloat16*>(smem + layout::q);
  auto k_tile = [&](int stage) {
    return reinterpret_cast<__nv_bfloat16*>(smem + layout::kv + 2 * stage * layout::tile);
  };
  auto v_tile = [&](int stage) {
    return reinterpret_cast<__nv_bfloat16*>(smem + layout::kv + (2 * stage + 1) * layout::tile);
  };

  {
    const int c = threadIdx.x % chunks;
#pragma unroll
    for (int pass = 0; pass < tile_rows * chunks / threads; ++pass) {
      const int j = threadIdx.x / chunks + pass * (threads / chunks);
      const bool valid = t0 + j < n;
      const size_t at = valid ? (size_t(first + t0 + j) * heads + h) * head_dim + c * 8 : 0;
      copy_16(q_s + j * ld + c * 8, valid ? q + at : nullptr);
    }
  }
  commit_copies();
  load_kv_tile<head_dim>(batch, table, row, kvh, 0, last_key, k_tile(0), v_tile(0));
  commit_copies();
  wait_copies<1>();
  __syncthreads();
  uint32_t q_f[k_steps][4];
#pragma unroll
  for (int k = 0; k < k_steps; ++k) load_matrices(q_f[k], q_s + (warp * 16 + lane % 16) * ld + k * 16 + lane / 16 * 8);

  float o[d_tiles][4];
#pragma unroll
  for (int j = 0; j < d_tiles; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  // Scores in log2 units, so exp2f; m per row (g, g + 8), l this lane's part of its sum.
  const float scale = rsqrtf(float(head_dim)) * log2e;
  const int warp_first_pos = start + t0 + warp * 16, pos = warp_first_pos + g;
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

  for (int kt = 0; kt < key_tiles; ++kt) {
    wait_copies<0>();
    __syncthreads();  // tile kt has landed and no warp still reads tile kt - 1's stage
    if (kt + 1 < key_tiles)
      load_kv_tile<head_dim>(batch, table, row, kvh, (kt + 1) * tile_keys, last_key, k_tile((kt + 1) % 2),
                             v_tile((kt + 1) % 2));
    commit_copies();
    const int first_key = kt * tile_keys;
    if (first_key > warp_first_pos + 15) continue;  // every key of the tile is after this warp's rows
    const __nv_bfloat16* k_s = k_tile(kt % 2);
    const __nv_bfloat16* v_s = v_tile(kt % 2);

    float sc[key_ntiles][4];
#pragma unroll
    for (int j = 0; j < key_ntiles; ++j) {
      sc[j][0] = sc[j][1] = sc[j][2] = sc[j][3] = 0.0f;
#pragma unroll
      for (int k = 0; k < k_steps; k += 2) {
        uint32_t b[4];
        load_matrices(b, k_s + (j * 8 + lane % 8) * ld + k * 16 + lane / 8 * 8);
        mma(sc[j], q_f[k], b[0], b[1]);
        mma(sc[j], q_f[k + 1], b[2], b[3]);
      }
    }

    // Key 0 is in every row's first tile, so m is finite from then on.
    const bool masked = first_key + tile_keys - 1 > warp_first_pos;
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < key_ntiles; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = first_key + j * 8 + 2 * t + (e & 1);
        float v = sc[j][e] * scale;
        if (masked && key > pos + (e >> 1) * 8) v = -INFINITY;
        sc[j][e] = v;
        tile_max[e >> 1] = fmaxf(tile_max[e >> 1], v);
      }
    float alpha[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
      const float m_new = fmaxf(m[r], tile_max[r]);
      alpha[r] = exp2f(m[r] - m_new);
      m[r] = m_new;
      l[r] *= alpha[r];
    }
#pragma unroll
    for (int j = 0; j < key_ntiles; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        sc[j][e] = exp2f(sc[j][e] - m[e >> 1]);
        l[e >> 1] += sc[j][e];
      }
#pragma unroll
    for (int j = 0; j < d_tiles; ++j) {
      o[j][0] *= alpha[0];
      o[j][1] *= alpha[0];
      o[j][2] *= alpha[1];
      o[j][3] *= alpha[1];
    }
#pragma unroll
    for (int kk = 0; kk < tile_keys / 16; ++kk) {
      const uint32_t p[4] = {pack_bf16(sc[2 * kk][0], sc[2 * kk][1]), pack_bf16(sc[2 * kk][2], sc[2 * kk][3]),
                             pack_bf16(sc[2 * kk + 1][0], sc[2 * kk + 1][1]),
                             pack_bf16(sc[2 * kk + 1][2], sc[2 * kk + 1][3])};
#pragma unroll
      for (int j = 0; j < d_tiles; j += 2) {
        uint32_t b[4];
        load_matrices_trans(b, v_s + (kk * 16 + lane % 8 + lane / 8 % 2 * 8) * ld + j * 8 + lane / 16 * 8);
        mma(o[j], p, b[0], b[1]);
        mma(o[j + 1], p, b[2], b[3]);
      }
    }
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    const int tok = t0 + warp * 16 + g + r * 8;
    if (tok >= n) continue;
    const float inv = 1.0f / l[r];
    __nv_bfloat16* dst = out + (size_t(first + tok) * heads + h) * head_dim + 2 * t;
#pragma unroll
    for (int j = 0; j < d_tiles; ++j)
      *reinterpret_cast<__nv_bfloat162*>(dst + j * 8) = __floats2bfloat162_rn(o[j][2 * r] * inv, o[j][2 * r + 1] * inv);
  }
}

template <int head_dim>
static void launch(const __nv_bfloat16* q, int heads, int kv_heads, const flash_attention_batch& batch,
                   __nv_bfloat16* out, cudaStream_t stream) {
  constexpr size_t shared = smem_layout<head_dim>::bytes;
  TROUPE_CUDA_CHECK(
      cudaFuncSetAttribute(flash_attention_kernel<head_dim>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
  // Two blocks per SM need most of the unified L1/shared memory as shared.
  TROUPE_CUDA_CHECK(cudaFuncSetAttribute(flash_attention_kernel<head_dim>,
                                         cudaFuncAttributePreferredSharedMemoryCarveout,
                                         cudaSharedmemCarveoutMaxShared));
  const dim3 grid(unsigned(heads), unsigned((batch.max_query_len + tile_rows - 1) / tile_rows), unsigned(batch.seqs));
  flash_attention_kernel<head_dim><<<grid, threads, shared, stream>>>(q, heads, kv_heads, batch, out);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

void flash_attention(const __nv_bfloat16* q, int heads, int kv_heads, int head_dim, const flash_attention_batch& batch,
                     __nv_bfloat16* out, cudaStream_t stream) {
  TROUPE_CHECK(kv_heads > 0 && heads > 0 && heads % kv_heads == 0, "heads must be a multiple of kv_heads");
  TROUPE_CHECK(head_dim == 64 || head_dim == 128 || head_dim == 256, "head_dim must be 64, 128 or 256");
  TROUPE_CHECK(batch.block_size > 0 && batch.max_blocks > 0, "bad KV layout");
  TROUPE_CHECK(batch.seqs >= 0 && batch.seqs <= 65535, "seqs out of range");
  TROUPE_CHECK(batch.max_query_len >= 0 && batch.max_query_len <= 65535 * tile_rows, "max_query_len out of range");
  const auto aligned = [](const void* p) { return p != nullptr && reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  TROUPE_CHECK(aligned(q) && aligned(out) && aligned(batch.keys) && aligned(batch.values),
               "q, out and the pools must be 16-byte aligned");
  if (batch.seqs == 0 || batch.max_query_len == 0) return;
  if (head_dim == 64)
    launch<64>(q, heads, kv_heads, batch, out, stream);
  else if (head_dim == 128)
    launch<128>(q, heads, kv_heads, batch, out, stream);
  else  // Qwen3.5-35B-A3B's full-attention layers; a block an SM (169 KB of tiles)
    launch<256>(q, heads, kv_heads, batch, out, stream);
}

}  // namespace troupe::cuda
