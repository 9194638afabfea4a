#include "kernels/cuda/flash_attention.cuh"

#include <mma.h>

#include <cmath>
#include <cstdint>

#include "base/check.hpp"
#include "kernels/cuda/async_copy.cuh"
#include "kernels/cuda/check.cuh"

namespace troupe::cuda {

namespace wmma = nvcuda::wmma;

static constexpr int threads = 128;
static constexpr int warps = threads / 32;
static constexpr int tile_rows = 16 * warps;  // query rows per block, 16 per warp
static constexpr int tile_keys = 64;          // key positions per step
static constexpr int key_frags = tile_keys / 16;

using frag_a = wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major>;
using frag_k = wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major>;
using frag_v = wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major>;
using frag_acc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// One block's shared memory, offsets in bytes. Rows are padded by 16 bytes so that the
// rows one WMMA load reads start in different banks.
template <int head_dim>
struct smem_layout {
  static constexpr int kv_ld = head_dim + 8;  // bf16, also the staged query tile
  static constexpr int s_ld = tile_keys + 4;  // fp32 scores
  static constexpr int p_ld = tile_keys + 8;  // bf16 probabilities
  static constexpr int o_ld = head_dim + 4;   // fp32 output tile
  static constexpr size_t kv_tile = size_t(tile_keys) * kv_ld * sizeof(__nv_bfloat16);
  static constexpr size_t kv = 0;  // K, V, K, V: two stages
  static constexpr size_t scores = kv + 4 * kv_tile;  // [warps, 16, s_ld]
  static constexpr size_t probs = scores + size_t(warps) * 16 * s_ld * sizeof(float);
  static constexpr size_t row_stats = probs + size_t(warps) * 16 * p_ld * sizeof(__nv_bfloat16);
  static constexpr size_t bytes = row_stats + size_t(tile_rows) * sizeof(float);
  static_assert(size_t(tile_rows) * kv_ld * sizeof(__nv_bfloat16) <= probs - scores,
                "the query tile is staged in the scores");
  static_assert(size_t(tile_rows) * o_ld * sizeof(float) <= scores,
                "the output tile is staged in the key/value buffers");
  static_assert(16 * 16 * sizeof(float) <= 16 * p_ld * sizeof(__nv_bfloat16),
                "the row-index tile fits a warp's probabilities");
};

// Keys and values of positions first_key..first_key + tile_keys - 1 through the block
// table, zeros past last_key: 16 bytes a copy, a row's copies on consecutive threads.
template <int head_dim>
static __device__ void load_kv_tile(const flash_attention_batch& batch, const int* table,
                                    int row, int kvh, int first_key, int last_key,
                                    __nv_bfloat16* k_s, __nv_bfloat16* v_s) {
  constexpr int chunks = head_dim / 8, ld = smem_layout<head_dim>::kv_ld;
  const int c = threadIdx.x % chunks;
#pragma unroll
  for (int pass = 0; pass < tile_keys * chunks / threads; ++pass) {
    const int j = threadIdx.x / chunks + pass * (threads / chunks), p = first_key + j;
    const bool valid = p <= last_key;
    size_t at = size_t(kvh) * head_dim + c * 8;
    if (valid)
      at += (size_t(table[p / batch.block_size]) * batch.block_size + p % batch.block_size) * row;
    copy_16(k_s + j * ld + c * 8, valid ? batch.keys + at : nullptr);
    copy_16(v_s + j * ld + c * 8, valid ? batch.values + at : nullptr);
  }
}

// Block (head, query tile, sequence), warp w owning query rows 16w..16w+15 of the tile.
// Per key tile: S = Q K^T (WMMA) to shared fp32, the online softmax by lane pairs per row,
// P rounded to bf16, O = diag(alpha) O + P V (WMMA). O stays in accumulator fragments.
template <int head_dim>
static __global__ void __launch_bounds__(threads)
    flash_attention_kernel(const __nv_bfloat16* q, int heads, int kv_heads,
                           flash_attention_batch batch, __nv_bfloat16* out) {
  using layout = smem_layout<head_dim>;
  constexpr int d_frags = head_dim / 16, chunks = head_dim / 8;
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
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  auto k_tile = [&](int stage) {
    return reinterpret_cast<__nv_bfloat16*>(smem + layout::kv + 2 * stage * layout::kv_tile);
  };
  auto v_tile = [&](int stage) {
    return reinterpret_cast<__nv_bfloat16*>(smem + layout::kv + (2 * stage + 1) * layout::kv_tile);
  };
  __nv_bfloat16* q_s = reinterpret_cast<__nv_bfloat16*>(smem + layout::scores);
  float* s_w = reinterpret_cast<float*>(smem + layout::scores) + warp * 16 * layout::s_ld;
  __nv_bfloat16* p_w =
      reinterpret_cast<__nv_bfloat16*>(smem + layout::probs) + warp * 16 * layout::p_ld;
  float* stat_w = reinterpret_cast<float*>(smem + layout::row_stats) + warp * 16;

  {
    const int c = threadIdx.x % chunks;
#pragma unroll
    for (int pass = 0; pass < tile_rows * chunks / threads; ++pass) {
      const int j = threadIdx.x / chunks + pass * (threads / chunks);
      const bool valid = t0 + j < n;
      const size_t at = valid ? (size_t(first + t0 + j) * heads + h) * head_dim + c * 8 : 0;
      copy_16(q_s + j * layout::kv_ld + c * 8, valid ? q + at : nullptr);
    }
  }
  commit_copies();
  load_kv_tile<head_dim>(batch, table, row, kvh, 0, last_key, k_tile(0), v_tile(0));
  commit_copies();

  // The accumulator layout is opaque: load a tile whose entries are their row numbers to
  // learn which of the 16 rows each element of a fragment holds.
  float* index_w = reinterpret_cast<float*>(p_w);
  for (int i = lane; i < 16 * 16; i += 32) index_w[i] = float(i / 16);
  __syncwarp();
  frag_acc index_f;
  wmma::load_matrix_sync(index_f, index_w, 16, wmma::mem_row_major);
  int row_of[frag_acc::num_elements];
#pragma unroll
  for (int i = 0; i < frag_acc::num_elements; ++i) row_of[i] = int(index_f.x[i]);

  wait_copies<1>();
  __syncthreads();
  frag_a q_f[d_frags];
#pragma unroll
  for (int k = 0; k < d_frags; ++k)
    wmma::load_matrix_sync(q_f[k], q_s + warp * 16 * layout::kv_ld + k * 16, layout::kv_ld);
  frag_acc o_f[d_frags];
#pragma unroll
  for (int k = 0; k < d_frags; ++k) wmma::fill_fragment(o_f[k], 0.0f);

  // Scores in log2 units, so exp2f. In the softmax a lane pair shares a row, each lane
  // taking alternate pairs of columns; l is this lane's part of the row's sum.
  const float scale = rsqrtf(float(head_dim)) * 1.44269504f;
  const int r = lane / 2, half = lane % 2;
  const int q_pos = start + t0 + warp * 16 + r;
  float m = -INFINITY, l = 0.0f;

  for (int kt = 0; kt < key_tiles; ++kt) {
    wait_copies<0>();
    __syncthreads();  // tile kt has landed and no warp still reads tile kt - 1's stage
    if (kt + 1 < key_tiles)
      load_kv_tile<head_dim>(batch, table, row, kvh, (kt + 1) * tile_keys, last_key,
                             k_tile((kt + 1) % 2), v_tile((kt + 1) % 2));
    commit_copies();
    const __nv_bfloat16* k_s = k_tile(kt % 2);
    const __nv_bfloat16* v_s = v_tile(kt % 2);

#pragma unroll
    for (int j = 0; j < key_frags; ++j) {
      frag_acc s_f;
      wmma::fill_fragment(s_f, 0.0f);
#pragma unroll
      for (int k = 0; k < d_frags; ++k) {
        frag_k k_f;
        wmma::load_matrix_sync(k_f, k_s + j * 16 * layout::kv_ld + k * 16, layout::kv_ld);
        wmma::mma_sync(s_f, q_f[k], k_f, s_f);
      }
      wmma::store_matrix_sync(s_w + j * 16, s_f, layout::s_ld, wmma::mem_row_major);
    }
    __syncwarp();

    const int first_key = kt * tile_keys;
    float x[tile_keys / 2];
    float tile_max = -INFINITY;
#pragma unroll
    for (int i = 0; i < tile_keys / 4; ++i) {
      const int c = half * 2 + i * 4;
      const float2 v = *reinterpret_cast<const float2*>(s_w + r * layout::s_ld + c);
      x[2 * i] = first_key + c <= q_pos ? v.x * scale : -INFINITY;
      x[2 * i + 1] = first_key + c + 1 <= q_pos ? v.y * scale : -INFINITY;
      tile_max = fmaxf(tile_max, fmaxf(x[2 * i], x[2 * i + 1]));
    }
    // Key 0 is in every row's first tile, so m is finite from then on.
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    const float m_new = fmaxf(m, tile_max);
    const float alpha = exp2f(m - m_new);
    m = m_new;
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < tile_keys / 4; ++i) {
      const float p0 = exp2f(x[2 * i] - m), p1 = exp2f(x[2 * i + 1] - m);
      sum += p0 + p1;
      *reinterpret_cast<__nv_bfloat162*>(p_w + r * layout::p_ld + half * 2 + i * 4) =
          __floats2bfloat162_rn(p0, p1);
    }
    l = l * alpha + sum;
    if (half == 0) stat_w[r] = alpha;
    __syncwarp();

#pragma unroll
    for (int i = 0; i < frag_acc::num_elements; ++i) {
      const float a = stat_w[row_of[i]];
#pragma unroll
      for (int k = 0; k < d_frags; ++k) o_f[k].x[i] *= a;
    }
    frag_a p_f[key_frags];
#pragma unroll
    for (int j = 0; j < key_frags; ++j) wmma::load_matrix_sync(p_f[j], p_w + j * 16, layout::p_ld);
#pragma unroll
    for (int k = 0; k < d_frags; ++k)
#pragma unroll
      for (int j = 0; j < key_frags; ++j) {
        frag_v v_f;
        wmma::load_matrix_sync(v_f, v_s + j * 16 * layout::kv_ld + k * 16, layout::kv_ld);
        wmma::mma_sync(o_f[k], p_f[j], v_f, o_f[k]);
      }
  }

  l += __shfl_xor_sync(0xffffffffu, l, 1);
  __syncthreads();  // the key/value stages are free for the output tile
  float* o_w = reinterpret_cast<float*>(smem + layout::kv) + warp * 16 * layout::o_ld;
#pragma unroll
  for (int k = 0; k < d_frags; ++k)
    wmma::store_matrix_sync(o_w + k * 16, o_f[k], layout::o_ld, wmma::mem_row_major);
  if (half == 0) stat_w[r] = 1.0f / l;
  __syncwarp();
  for (int i = lane; i < 16 * chunks; i += 32) {
    const int rr = i / chunks, c = (i % chunks) * 8, t = t0 + warp * 16 + rr;
    if (t >= n) continue;
    const float inv = stat_w[rr];
    const float4 a = *reinterpret_cast<const float4*>(o_w + rr * layout::o_ld + c);
    const float4 b = *reinterpret_cast<const float4*>(o_w + rr * layout::o_ld + c + 4);
    alignas(16) __nv_bfloat162 packed[4] = {
        __floats2bfloat162_rn(a.x * inv, a.y * inv), __floats2bfloat162_rn(a.z * inv, a.w * inv),
        __floats2bfloat162_rn(b.x * inv, b.y * inv), __floats2bfloat162_rn(b.z * inv, b.w * inv)};
    *reinterpret_cast<uint4*>(out + (size_t(first + t) * heads + h) * head_dim + c) =
        *reinterpret_cast<const uint4*>(packed);
  }
}

template <int head_dim>
static void launch(const __nv_bfloat16* q, int heads, int kv_heads,
                   const flash_attention_batch& batch, __nv_bfloat16* out, cudaStream_t stream) {
  constexpr size_t shared = smem_layout<head_dim>::bytes;
  TROUPE_CUDA_CHECK(cudaFuncSetAttribute(flash_attention_kernel<head_dim>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
  // Two blocks per SM need most of the unified L1/shared memory as shared.
  TROUPE_CUDA_CHECK(cudaFuncSetAttribute(flash_attention_kernel<head_dim>,
                                         cudaFuncAttributePreferredSharedMemoryCarveout,
                                         cudaSharedmemCarveoutMaxShared));
  const dim3 grid(unsigned(heads), unsigned((batch.max_query_len + tile_rows - 1) / tile_rows),
                  unsigned(batch.seqs));
  flash_attention_kernel<head_dim><<<grid, threads, shared, stream>>>(q, heads, kv_heads, batch, out);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

void flash_attention(const __nv_bfloat16* q, int heads, int kv_heads, int head_dim,
                     const flash_attention_batch& batch, __nv_bfloat16* out, cudaStream_t stream) {
  TROUPE_CHECK(kv_heads > 0 && heads > 0 && heads % kv_heads == 0, "heads must be a multiple of kv_heads");
  TROUPE_CHECK(head_dim == 64 || head_dim == 128, "head_dim must be 64 or 128");
  TROUPE_CHECK(batch.block_size > 0 && batch.max_blocks > 0, "bad KV layout");
  TROUPE_CHECK(batch.seqs >= 0 && batch.seqs <= 65535, "seqs out of range");
  TROUPE_CHECK(batch.max_query_len >= 0 && batch.max_query_len <= 65535 * tile_rows,
               "max_query_len out of range");
  const auto aligned = [](const void* p) { return p != nullptr && reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  TROUPE_CHECK(aligned(q) && aligned(out) && aligned(batch.keys) && aligned(batch.values),
               "q, out and the pools must be 16-byte aligned");
  if (batch.seqs == 0 || batch.max_query_len == 0) return;
  if (head_dim == 64)
    launch<64>(q, heads, kv_heads, batch, out, stream);
  else
    launch<128>(q, heads, kv_heads, batch, out, stream);
}

}  // namespace troupe::cuda
