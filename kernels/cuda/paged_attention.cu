#include "kernels/cuda/paged_attention.cuh"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <cooperative_groups.h>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/mma_bf16.cuh"
#include "kernels/cuda/qk_norm_rope_row.cuh"

namespace troupe::cuda {

static constexpr int warps = 4;  // a block is four independent warps, one split each
static constexpr int threads = warps * 32;
static constexpr int chunk = 16;  // positions a warp takes per step: one k-step of P V
static constexpr int max_group = 16;
static constexpr int max_split_len = 1024;
static constexpr int min_split_chunks = 8;
static constexpr int few_kv_heads = 16;
static constexpr int target_warps = 2048;
static constexpr int max_splits_wanted = 128;  // the merge reads every split
// cluster_kernel: eight warps a block, as the split body takes over 200 registers a thread
// at head_dim 128 (sixteen warps would need at most 128, and spill), so a block fills an
// SM's registers; at most eight blocks a cluster (the portable size) and 64 blocks in all,
// so that every cluster fits on the GPU at once (a cluster's blocks share a GPC); at most
// four chunks a warp (longer contexts take the split path's parallelism).
static constexpr int cluster_warps = 8;
static constexpr int cluster_threads = cluster_warps * 32;
static constexpr int max_cluster = 8;
static constexpr int cluster_blocks = 64;
static constexpr int cluster_pairs = 128;
static constexpr int max_cluster_chunks = 4;
static constexpr float log2e = 1.44269504f;

// A sequence's positions a split: its own length over the plan's splits, in whole chunks.
// The plan is made for the longest sequence the call may hold (a decode graph's bucket, a
// power of two): a shorter one still spreads over all its warps (batch 128 at 512 to 640
// positions in a 1024 bucket left one warp of four without work).
static __host__ __device__ int split_len_of(int len, int splits) {
  return ((len + chunk - 1) / chunk + splits - 1) / splits * chunk;
}

namespace {

// Enough splits that the batch has about 2k warps, about two waves of them on the H200 at
// eight a SM (a short batch still fills the GPU; more, shorter splits only add merging: at
// batch 128 and 640 positions 58.8 us with 4 splits a pair, 73.6 with 5 of them from an 8k
// target, 66.0 with 8; at 4096 positions 275 against 303 us with 16), each at least
// min_split_chunks chunks long (batch 32 at 640 positions: 15.9 us with eight-chunk splits,
// 21.1 with four, 31.4 with two) and at most 1024 positions; then down to whole blocks of
// warps, which would otherwise idle past the end (the 5 splits ran in 8 warps), unless
// that leaves splits too long or none. A batch of a few KV heads takes one-chunk splits:
// its warps are latency-bound (the decode step at batch 1 and 512 positions: 277 tok/s
// against 269).
int plan_splits(int seqs, int kv_heads, int max_seq_len) {
  const int chunks = (max_seq_len + chunk - 1) / chunk;
  const int wanted = std::min((target_warps + seqs * kv_heads - 1) / (seqs * kv_heads), max_splits_wanted);
  const int least = (max_seq_len + max_split_len - 1) / max_split_len;
  const int min_chunks = seqs * kv_heads <= few_kv_heads ? 1 : min_split_chunks;
  const int fewest = std::max(std::min(wanted, (chunks + min_chunks - 1) / min_chunks), least);
  int splits = std::max(fewest / warps * warps, warps);
  if (splits < least) splits = (least + warps - 1) / warps * warps;
  const int split_len = split_len_of(max_seq_len, splits);
  return (max_seq_len + split_len - 1) / split_len;  // those with positions at the longest
}

// cluster_kernel's splits for `pairs` (sequence, KV head) pairs, or 0 for none: a
// cluster a pair. A few pairs (batch 1 to 4) take enough blocks that each warp takes one
// chunk (so all of them load their keys and values before waiting for the previous
// kernel) as far as the limits allow; up to 128 pairs (batch 32) take warps of
// plan_splits' length, and skip its merge launch and workspace round trip (on the H200 the
// batch-32 decode attention 29.3 -> 25.9 us); more pairs leave the clusters too few
// blocks an SM (batch 128: the step 5,618 against 5,855 tok/s). The splits are the
// cluster's warps, block after block.
int plan_cluster(int64_t pairs, int max_seq_len) {
  if (pairs > cluster_pairs) return 0;
  const bool few = pairs <= few_kv_heads;
  const int most = few ? std::min(max_cluster, std::max(1, cluster_blocks / int(pairs))) : max_cluster;
  const int chunks = (max_seq_len + chunk - 1) / chunk;
  if (chunks > most * cluster_warps * max_cluster_chunks) return 0;
  const int per_warp = few ? 1 : min_split_chunks;
  const int blocks = std::min((chunks + cluster_warps * per_warp - 1) / (cluster_warps * per_warp), most);
  return blocks * cluster_warps;
}

}  // namespace

// seqs x splits is at most target_warps / kv_heads + seqs * (least + warps) for any batch
// of up to `seqs` sequences (plan_splits' wanted, or least, rounded up to whole blocks).
size_t paged_attention_workspace_floats(int seqs, int heads, int kv_heads, int head_dim, int max_seq_len) {
  const size_t least = size_t(max_seq_len + max_split_len - 1) / max_split_len;
  const size_t rows = size_t(target_warps + kv_heads - 1) / size_t(kv_heads) + size_t(seqs) * (least + warps + 1);
  return rows * size_t(heads) * size_t(head_dim + 2);
}

static __device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

static __device__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Where one split's results live in the workspace: unnormalised outputs, then the maxima
// (log2 units) and the sums of exponentials, each [seqs, heads, splits].
struct split_results {
  float* out;
  float* max;
  float* sum;
};

static __host__ __device__ split_results results_of(float* workspace, int seqs, int heads, int head_dim, int splits) {
  const size_t rows = size_t(seqs) * heads * splits;
  return {workspace, workspace + rows * head_dim, workspace + rows * (head_dim + 1)};
}

struct split_shape {
  int heads, kv_heads, group, splits;
};

// `words` 32-bit words from `src` (16-byte aligned), or zeros when src is null.
template <int words>
static __device__ void load_words(const __nv_bfloat16* src, uint32_t (&dst)[words]) {
  static_assert(words % 4 == 0, "16-byte loads");
#pragma unroll
  for (int i = 0; i < words; i += 4) {
    const uint4 v = src != nullptr ? *reinterpret_cast<const uint4*>(src + 2 * i) : make_uint4(0, 0, 0, 0);
    dst[i] = v.x;
    dst[i + 1] = v.y;
    dst[i + 2] = v.z;
    dst[i + 3] = v.w;
  }
}

// What attend_split reads of this step once the previous kernel is done: the KV head's
// query rows (its group of heads, head_dim apart) and the newest position's key and value
// rows of the KV head, both null to read those from the pool (where a previous kernel
// wrote them). 16-byte aligned.
struct step_rows {
  const __nv_bfloat16* q;
  const __nv_bfloat16* key;
  const __nv_bfloat16* value;
};

// One warp's split `split` of KV head kvh of sequence s, FlashAttention-2 style on tensor
// cores with the query heads of the KV head as the rows of the products (rows 8..15 only
// when wide). Lane (g = lane / 4, t = lane % 4) of an m16n8k16 holds, in both products, k
// indices 2t, 2t+1, 2t+8, 2t+9 of each k-step. The order of the head dimensions inside a
// dot product is free, so for Q K^T logical k-step `step` of lane t maps to dimensions
// t * head_dim / 4 + 4 step .. + 4: each lane reads one contiguous quarter of a key row.
// For P V the output columns are permuted instead: column n of n-tile j is dimension
// n * head_dim / 8 + j, so each lane reads one contiguous eighth of a value row. The
// scores' accumulator layout is the A layout of P V (as in FlashAttention-2), so the
// probabilities never leave registers.
// Leaves in o this lane's part of the unnormalised output (o[j][0..1] row g, [2..3] row
// g + 8), in m the two rows' maxima (log2 units) and in l their sums of exponentials (the
// quad's, added up). Calls begin_dependent, as every thread must, then after_wait() (once,
// from one place: it may hold a block barrier) for the step's rows. A split past the
// sequence's end reads nothing but the length and gives m = -inf, l = 0, o = 0 and false.
template <int head_dim, bool wide, class After_wait>
static __device__ __forceinline__ bool attend_split(const split_shape& sh, const paged_kv_batch& kv, int split, int kvh,
                                                    int s, After_wait after_wait, float (&o)[head_dim / 8][4],
                                                    float (&m)[2], float (&l)[2]) {
  constexpr int quarter = head_dim / 4, k_steps = head_dim / 16, n_tiles = head_dim / 8;
  const int lane = int(threadIdx.x) % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int j = 0; j < n_tiles; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
  m[0] = m[1] = -INFINITY;
  l[0] = l[1] = 0.0f;
  // The block tables, the lengths and every key and value but the newest position's come
  // from before this step: they are read before the wait, while the previous kernel still
  // runs. An empty split (past the end) has last = first: it loads nothing, and no entry
  // of the table (there may be none).
  const int len = kv.seq_lens[s], split_len = split_len_of(len, sh.splits), first = split * split_len;
  const bool empty = first >= len;
  const int last = empty ? first : min(first + split_len, len);
  const size_t row = size_t(sh.kv_heads) * head_dim;
  // The split's first 32 blocks of the table sit one per lane, so a position's slot is a
  // shuffle away instead of a load the key and value loads would wait for. Every lane
  // calls slot_of (the shuffle needs them all); positions past the split's end give junk.
  const int* table = kv.block_tables + size_t(s) * kv.max_blocks;
  const int first_block = first / kv.block_size;
  const int last_block = (last - 1) / kv.block_size;
  const int lane_block = !empty && first_block + lane <= last_block ? table[first_block + lane] : 0;
  auto slot_of = [&](int p) {
    const int b = min(p, last - 1) / kv.block_size - first_block;
    const int from_lane = __shfl_sync(0xffffffffu, lane_block, b % 32);
    const int block = b < 32 ? from_lane : table[first_block + b];
    return size_t(block) * kv.block_size + min(p, last - 1) % kv.block_size;
  };
  const __nv_bfloat16* keys = kv.keys + size_t(kvh) * head_dim;
  const __nv_bfloat16* values = kv.values + size_t(kvh) * head_dim;
  // Keys of positions c0 + g and c0 + 8 + g; values of c0 + 2t, 2t + 1, 2t + 8, 2t + 9.
  // Positions past the end read nothing: zeros (the pool there may hold NaN). Position
  // `newest` is read only when `with_newest`.
  uint32_t kw[2][quarter / 2], vw[4][n_tiles / 2];
  const int newest = len - 1;
  // With blocks a multiple of the chunk (the default 16) a chunk lies in one block, so its
  // slots follow the first's: one lookup a chunk instead of one a position, each a shuffle
  // and two divisions by the block size (which left the warps issue-bound).
  const bool whole_blocks = kv.block_size % chunk == 0;
  auto load_chunk = [&](int c0, bool with_newest) {
    const int end = with_newest ? last : min(last, newest);
    const size_t first_slot = whole_blocks ? slot_of(c0) : 0;
    auto slot_in_chunk = [&](int p) { return whole_blocks ? first_slot + size_t(p - c0) : slot_of(p); };
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int p = c0 + half * 8 + g;
      const size_t slot = slot_in_chunk(p);
      load_words(p < end ? keys + slot * row + t * quarter : nullptr, kw[half]);
    }
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int p = c0 + 2 * t + r % 2 + r / 2 * 8;
      const size_t slot = slot_in_chunk(p);
      load_words(p < end ? values + slot * row + g * n_tiles : nullptr, vw[r]);
    }
  };
  load_chunk(first, false);
  begin_dependent();
  const step_rows now = after_wait();
  if (empty) return false;
  // The newest position's key and value into the chunk at c0, if it holds them.
  auto load_newest = [&](int c0) {
    if (newest >= c0 + chunk) return;  // the same for the whole warp
    const __nv_bfloat16 *key = now.key, *value = now.value;
    if (key == nullptr) {
      const size_t slot = slot_of(newest);  // by every lane: a shuffle
      key = keys + slot * row;
      value = values + slot * row;
    }
#pragma unroll
    for (int half = 0; half < 2; ++half)
      if (c0 + half * 8 + g == newest) load_words(key + t * quarter, kw[half]);
#pragma unroll
    for (int r = 0; r < 4; ++r)
      if (c0 + 2 * t + r % 2 + r / 2 * 8 == newest) load_words(value + g * n_tiles, vw[r]);
  };
  load_newest(first);

  // Query fragments: a[0]/a[2] row g, a[1]/a[3] row g + 8, zero past the group.
  uint32_t qa[k_steps][4];
  {
    const __nv_bfloat16* q_head = now.q + t * quarter;
    uint32_t low[quarter / 2], high[quarter / 2];
    load_words(g < sh.group ? q_head + size_t(g) * head_dim : nullptr, low);
    if constexpr (wide) load_words(g + 8 < sh.group ? q_head + size_t(g + 8) * head_dim : nullptr, high);
#pragma unroll
    for (int step = 0; step < k_steps; ++step) {
      qa[step][0] = low[2 * step];
      qa[step][2] = low[2 * step + 1];
      qa[step][1] = wide ? high[2 * step] : 0u;
      qa[step][3] = wide ? high[2 * step + 1] : 0u;
    }
  }

  const float scale = rsqrtf(float(head_dim)) * log2e;
  for (int c0 = first; c0 < last; c0 += chunk) {
    if (c0 != first) {  // the newest position from the pool with the rest, or from the step's rows
      load_chunk(c0, now.key == nullptr);
      if (now.key != nullptr) load_newest(c0);
    }
    // Scores: sc[half][0..1] row g, positions c0 + half * 8 + 2t + (0, 1); [2..3] row g + 8.
    float sc[2][4] = {};
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int step = 0; step < k_steps; ++step) mma(sc[half], qa[step], kw[half][2 * step], kw[half][2 * step + 1]);

    // Online softmax in log2 units; the four lanes of a quad share a row.
    float alpha[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = -INFINITY;
#pragma unroll
      for (int half = 0; half < 2; ++half)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          float& x = sc[half][2 * r + j];
          x = c0 + half * 8 + 2 * t + j < last ? x * scale : -INFINITY;
          mx = fmaxf(mx, x);
        }
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(m[r], mx);  // finite: position c0 is in every chunk
      alpha[r] = exp2f(m[r] - m_new);
      m[r] = m_new;
      float sum = 0.0f;
#pragma unroll
      for (int half = 0; half < 2; ++half)
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          float& x = sc[half][2 * r + j];
          x = exp2f(x - m_new);
          sum += x;
        }
      l[r] = l[r] * alpha[r] + sum;  // this lane's part; the quad's parts add at the end
    }

    const uint32_t pa[4] = {pack_bf16(sc[0][0], sc[0][1]), pack_bf16(sc[0][2], sc[0][3]), pack_bf16(sc[1][0], sc[1][1]),
                            pack_bf16(sc[1][2], sc[1][3])};
#pragma unroll
    for (int j = 0; j < n_tiles; ++j) {
      // Element j of each value row's eighth: the low or high half of word j / 2.
      const uint32_t select = j % 2 == 0 ? 0x5410u : 0x7632u;
      const uint32_t b0 = __byte_perm(vw[0][j / 2], vw[1][j / 2], select);
      const uint32_t b1 = __byte_perm(vw[2][j / 2], vw[3][j / 2], select);
      o[j][0] *= alpha[0];
      o[j][1] *= alpha[0];
      o[j][2] *= alpha[1];
      o[j][3] *= alpha[1];
      mma(o[j], pa, b0, b1);
    }
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
  }
  return true;
}

// Warp (split, kv head, sequence): attend_split, its results to the workspace.
template <int head_dim, bool wide>
static __global__ void __launch_bounds__(threads)
    split_kernel(const __nv_bfloat16* q, int q_stride, split_shape sh, paged_kv_batch kv, split_results results) {
  constexpr int n_tiles = head_dim / 8;
  const int lane = int(threadIdx.x) % 32, g = lane / 4, t = lane % 4;
  const int split = int(blockIdx.x) * warps + int(threadIdx.x) / 32, kvh = int(blockIdx.y), s = int(blockIdx.z);
  const __nv_bfloat16* q_heads = q + size_t(s) * q_stride + size_t(kvh) * sh.group * head_dim;
  float o[n_tiles][4], m[2], l[2];  // rows g and g + 8
  if (!attend_split<head_dim, wide>(
          sh, kv, split, kvh, s,
          [&] {
            return step_rows{q_heads, nullptr, nullptr};
          },
          o, m, l))
    return;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int head = g + 8 * r;
    if (head >= sh.group || (r == 1 && !wide)) continue;
    const size_t out_row = (size_t(s) * sh.heads + size_t(kvh) * sh.group + head) * sh.splits + split;
    if (t == 0) {
      results.max[out_row] = m[r];
      results.sum[out_row] = l[r];
    }
    // Columns 2t and 2t + 1 of n-tile j are dimensions 2t * n_tiles + j and (2t + 1) *
    // n_tiles + j: this lane's two runs of n_tiles dimensions.
    float* out = results.out + out_row * head_dim + 2 * t * n_tiles;
#pragma unroll
    for (int j = 0; j < n_tiles; j += 4) {
      *reinterpret_cast<float4*>(out + j) = make_float4(o[j][2 * r], o[j + 1][2 * r], o[j + 2][2 * r], o[j + 3][2 * r]);
      *reinterpret_cast<float4*>(out + n_tiles + j) =
          make_float4(o[j][2 * r + 1], o[j + 1][2 * r + 1], o[j + 2][2 * r + 1], o[j + 3][2 * r + 1]);
    }
  }
}

// Block (head, sequence): rescale each split to the global maximum and normalise. The
// splits' maxima and sums are read once, in parallel, into shared memory (a loop of
// dependent loads per thread would wait on memory once per split).
static __global__ void merge_kernel(int heads, int head_dim, const int* seq_lens, int splits, split_results results,
                                    __nv_bfloat16* out) {
  extern __shared__ float weight_s[];  // [splits]: 2^(max_i - max)
  __shared__ float reduce_s[warps];
  begin_dependent();
  const int s = blockIdx.y, h = blockIdx.x;
  const int len = seq_lens[s], split_len = split_len_of(len, splits), used = (len + split_len - 1) / split_len;
  const size_t base = (size_t(s) * heads + h) * splits;
  float m = -INFINITY;
  for (int i = threadIdx.x; i < used; i += threads) m = fmaxf(m, results.max[base + i]);
  m = warp_max(m);
  if (threadIdx.x % 32 == 0) reduce_s[threadIdx.x / 32] = m;
  __syncthreads();
  m = reduce_s[0];
  for (int w = 1; w < warps; ++w) m = fmaxf(m, reduce_s[w]);
  __syncthreads();
  float l = 0.0f;
  for (int i = threadIdx.x; i < used; i += threads) {
    weight_s[i] = exp2f(results.max[base + i] - m);
    l += results.sum[base + i] * weight_s[i];
  }
  l = warp_sum(l);
  if (threadIdx.x % 32 == 0) reduce_s[threadIdx.x / 32] = l;
  __syncthreads();
  l = 0.0f;
  for (int w = 0; w < warps; ++w) l += reduce_s[w];
  for (int d = threadIdx.x; d < head_dim; d += threads) {
    float acc = 0.0f;
#pragma unroll 8
    for (int i = 0; i < used; ++i) acc += results.out[(base + i) * head_dim + d] * weight_s[i];
    out[(size_t(s) * heads + h) * head_dim + d] = __float2bfloat16(acc / l);
  }
}

// A split's weight in a merge: 2^(m_i - m), zero for a split without positions (m_i =
// -inf, and m may be too: the difference would be NaN).
static __device__ float weight_of(float m_i, float m) { return m_i == -INFINITY ? 0.0f : exp2f(m_i - m); }

static __device__ void add_scaled(float4& acc, const float4& x, float weight) {
  acc.x += x.x * weight;
  acc.y += x.y * weight;
  acc.z += x.z * weight;
  acc.w += x.w * weight;
}

// cluster_kernel's shared memory: each warp's unnormalised output in the accumulators' own
// order (float4 k of lane `lane` in row half r at (r * per_lane + k) * 32 + lane, so a warp
// stores 512 contiguous bytes at a time), each warp's maxima and sums of the rows, then the
// block's.
template <int head_dim, bool wide>
struct cluster_layout {
  static constexpr int halves = wide ? 2 : 1, rows = 8 * halves;
  static constexpr int per_lane = head_dim / 16;          // float4s of a lane in a row half
  static constexpr int vectors = halves * per_lane * 32;  // float4s of a warp
  static constexpr size_t bytes =
      size_t(cluster_warps) * vectors * sizeof(float4) + size_t(2 * cluster_warps * rows + 2 * rows) * sizeof(float);
};

// Cluster (KV head, sequence) of gridDim.x blocks: warp w of block b takes split
// b * cluster_warps + w. The block's warps merge in its shared memory in warp order, then
// the blocks through distributed shared memory in block order, each block normalising a
// contiguous share of the output rows of the KV head's query heads. Nothing goes through
// global memory but the output. `shared`: the kernel's dynamic shared memory, of which it
// uses cluster_layout's bytes; after_wait as attend_split takes it, called by every thread.
template <int head_dim, bool wide, class After_wait>
static __device__ __forceinline__ void attend_in_cluster(const split_shape& sh, const paged_kv_batch& kv,
                                                         __nv_bfloat16* out, float4* shared, After_wait after_wait) {
  using layout = cluster_layout<head_dim, wide>;
  constexpr int n_tiles = head_dim / 8, runs = n_tiles / 4, per_lane = layout::per_lane;
  constexpr int rows = layout::rows, vectors = layout::vectors;
  float4* o_s = shared;  // [cluster_warps][vectors]; [0] is the block's once merged
  float* m_s = reinterpret_cast<float*>(o_s + cluster_warps * vectors);  // [cluster_warps][rows]
  float* l_s = m_s + cluster_warps * rows;
  float* block_m = l_s + cluster_warps * rows;  // [rows]
  float* block_l = block_m + rows;

  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32, g = lane / 4;
  const int kvh = int(blockIdx.y), s = int(blockIdx.z);
  float o[n_tiles][4], m[2], l[2];  // rows g and g + 8
  attend_split<head_dim, wide>(sh, kv, int(blockIdx.x) * cluster_warps + warp, kvh, s, after_wait, o, m, l);
#pragma unroll
  for (int r = 0; r < layout::halves; ++r) {
    if (lane % 4 == 0) {
      m_s[warp * rows + 8 * r + g] = m[r];
      l_s[warp * rows + 8 * r + g] = l[r];
    }
    // Float4 k holds dimensions 2t * n_tiles + 4k .. + 3: column 2t + k / runs of n-tiles
    // 4 (k % runs) .. + 3.
#pragma unroll
    for (int k = 0; k < per_lane; ++k) {
      const int j = k % runs * 4, c = 2 * r + k / runs;
      o_s[warp * vectors + (r * per_lane + k) * 32 + lane] =
          make_float4(o[j][c], o[j + 1][c], o[j + 2][c], o[j + 3][c]);
    }
  }
  __syncthreads();

  // Each thread merges its own float4s of every warp into warp 0's place.
  for (int v = int(threadIdx.x); v < vectors; v += cluster_threads) {
    const int row = v / (per_lane * 32) * 8 + v % 32 / 4;
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < cluster_warps; ++w) mx = fmaxf(mx, m_s[w * rows + row]);
    float sum = 0.0f;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int w = 0; w < cluster_warps; ++w) {
      const float weight = weight_of(m_s[w * rows + row], mx);
      sum += l_s[w * rows + row] * weight;
      add_scaled(acc, o_s[w * vectors + v], weight);
    }
    o_s[v] = acc;
    if (v % (per_lane * 32) < 32 && v % 4 == 0) {  // float4 0 of the quad's lane 0: once a row
      block_m[row] = mx;
      block_l[row] = sum;
    }
  }
  namespace cg = cooperative_groups;
  const cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();

  const int blocks = int(cluster.num_blocks()), rank = int(cluster.block_rank());
  const int share = (vectors + blocks - 1) / blocks, end = min((rank + 1) * share, vectors);
  for (int v = rank * share + int(threadIdx.x); v < end; v += cluster_threads) {
    const int quad_lane = v % 32, k = v / 32 % per_lane, row = v / (per_lane * 32) * 8 + quad_lane / 4;
    if (row >= sh.group) continue;
    float mb[max_cluster], mx = -INFINITY;
#pragma unroll
    for (int b = 0; b < max_cluster; ++b) {
      mb[b] = b < blocks ? *cluster.map_shared_rank(block_m + row, b) : -INFINITY;
      mx = fmaxf(mx, mb[b]);
    }
    float sum = 0.0f;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int b = 0; b < max_cluster; ++b) {
      if (b >= blocks) break;
      const float weight = weight_of(mb[b], mx);
      sum += *cluster.map_shared_rank(block_l + row, b) * weight;
      add_scaled(acc, *cluster.map_shared_rank(o_s + v, b), weight);
    }
    __nv_bfloat16* dst =
        out + (size_t(s) * sh.heads + size_t(kvh) * sh.group + row) * head_dim + 2 * (quad_lane % 4) * n_tiles + 4 * k;
    dst[0] = __float2bfloat16(acc.x / sum);
    dst[1] = __float2bfloat16(acc.y / sum);
    dst[2] = __float2bfloat16(acc.z / sum);
    dst[3] = __float2bfloat16(acc.w / sum);
  }
  cluster.sync();  // the other blocks may still be reading this one's shared memory
}

template <int head_dim, bool wide>
static __global__ void __launch_bounds__(cluster_threads, 1)
    cluster_kernel(const __nv_bfloat16* q, int q_stride, split_shape sh, paged_kv_batch kv, __nv_bfloat16* out) {
  extern __shared__ float4 shared[];
  const __nv_bfloat16* q_heads = q + size_t(blockIdx.z) * q_stride + size_t(blockIdx.y) * sh.group * head_dim;
  attend_in_cluster<head_dim, wide>(sh, kv, out, shared, [&] { return step_rows{q_heads, nullptr, nullptr}; });
}

// decode_attention's inputs beyond paged_attention's: the step's q, k and v rows (q_stride,
// k_stride and cache.v_stride elements a sequence), and what qk_norm_rope does with them.
struct step_qkv {
  const __nv_bfloat16* q;
  int q_stride;
  const __nv_bfloat16* k;
  int k_stride;
  const float* q_norm;
  const float* k_norm;
  float eps;
  const int* positions;
  kv_cache_target cache;
};

// fused_cluster_kernel's shared memory: cluster_layout's, then the KV head's query rows
// normed and rotated (bf16 [rows][head_dim]), the newest position's key and value rows of
// the KV head (bf16 [head_dim] each), and a row of fp32 for each warp to stage its rows in.
template <int head_dim, bool wide>
struct fused_layout {
  using base = cluster_layout<head_dim, wide>;
  static constexpr size_t q_at = base::bytes;
  static constexpr size_t key_at = q_at + size_t(base::rows) * head_dim * sizeof(__nv_bfloat16);
  static constexpr size_t value_at = key_at + head_dim * sizeof(__nv_bfloat16);
  static constexpr size_t stage_at = value_at + head_dim * sizeof(__nv_bfloat16);
  static constexpr size_t bytes = stage_at + size_t(cluster_warps) * head_dim * sizeof(float);
  static_assert(q_at % 16 == 0 && key_at % 16 == 0 && value_at % 16 == 0, "attend_split loads 16 bytes");
};

// cluster_kernel with qk_norm_rope's work for its (sequence, KV head) done inside: after
// the wait every block normalises and rotates the KV head's query heads into its shared
// memory (the bits qk_norm_rope would leave in q, which stays as it was), one warp a head;
// the block that holds the newest position (the split (len - 1) / split_len_of) also
// normalises and rotates the KV head's key and copies its value, into its shared memory,
// where that split's warp reads them after the block barrier, and into the pools at the
// sequence's slot for later kernels (grid completion publishes them). No block but that
// one reads the newest position, so nothing of this step crosses blocks. The weights,
// positions and slots depend on no earlier kernel: read, and the rotation computed,
// before the wait.
template <int head_dim, bool wide, bool partial>
static __global__ void __launch_bounds__(cluster_threads, 1)
    fused_cluster_kernel(step_qkv in, split_shape sh, paged_kv_batch kv, __nv_bfloat16* out,
                         const __grid_constant__ inv_freq_table inv_freq) {
  using layout = fused_layout<head_dim, wide>;
  extern __shared__ float4 shared[];
  char* const bytes = reinterpret_cast<char*>(shared);
  __nv_bfloat16* const q_s = reinterpret_cast<__nv_bfloat16*>(bytes + layout::q_at);
  __nv_bfloat16* const key_s = reinterpret_cast<__nv_bfloat16*>(bytes + layout::key_at);
  __nv_bfloat16* const value_s = reinterpret_cast<__nv_bfloat16*>(bytes + layout::value_at);
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  float* const stage = reinterpret_cast<float*>(bytes + layout::stage_at) + warp * head_dim;
  const int kvh = int(blockIdx.y), s = int(blockIdx.z), block = int(blockIdx.x);
  const int len = kv.seq_lens[s], slot = in.cache.slots[s];
  const int split_len = split_len_of(len, sh.splits);
  const bool reads = block * cluster_warps * split_len < len;  // some warp of it has positions
  const bool holds_newest = (len - 1) / split_len / cluster_warps == block;
  const auto rotation = rotation_of<head_dim, partial>(in.positions[s], inv_freq, head_dim);
  const lane_elements<head_dim> q_weight = load_lane_elements<head_dim>(in.q_norm, head_dim);
  const lane_elements<head_dim> k_weight = load_lane_elements<head_dim>(in.k_norm, head_dim);
  // Rows 0 .. group - 1 are the query heads, row group the key (and the value): warp w
  // takes rows w, w + cluster_warps, ... Its loads come first, so they wait for memory once.
  auto after_wait = [&] {
    constexpr int most = (max_group + 1 + cluster_warps - 1) / cluster_warps, per_lane = head_dim / 32;
    const int rows = reads ? sh.group + (holds_newest ? 1 : 0) : 0;
    lane_elements<head_dim> x[most] = {};
    __nv_bfloat16 v[per_lane];
#pragma unroll
    for (int j = 0; j < most; ++j) {
      const int r = warp + j * cluster_warps;
      if (r < rows && r < sh.group) {
        x[j] = load_lane_elements<head_dim>(in.q + size_t(s) * in.q_stride + (size_t(kvh) * sh.group + r) * head_dim,
                                            head_dim);
      } else if (r < rows) {
        x[j] = load_lane_elements<head_dim>(in.k + size_t(s) * in.k_stride + size_t(kvh) * head_dim, head_dim);
        const __nv_bfloat16* v_row = in.cache.v + size_t(s) * in.cache.v_stride + size_t(kvh) * head_dim;
#pragma unroll
        for (int e = 0; e < per_lane; ++e) v[e] = v_row[lane + 32 * e];
      }
    }
#pragma unroll
    for (int j = 0; j < most; ++j) {
      const int r = warp + j * cluster_warps;
      if (r < rows && r < sh.group) {
        __nv_bfloat16* to = q_s + r * head_dim;
        norm_rope_row(x[j], q_weight, in.eps, head_dim, rotation, stage, [&](int i, __nv_bfloat16 y) { to[i] = y; });
      } else if (r < rows) {
        // A padding row of a decode graph (slot < 0) writes no pool, as in qk_norm_rope.
        const size_t pool_at = slot < 0 ? 0 : size_t(slot) * sh.kv_heads * head_dim + size_t(kvh) * head_dim;
#pragma unroll
        for (int e = 0; e < per_lane; ++e) {
          value_s[lane + 32 * e] = v[e];
          if (slot >= 0) in.cache.value_pool[pool_at + lane + 32 * e] = v[e];
        }
        norm_rope_row(x[j], k_weight, in.eps, head_dim, rotation, stage, [&](int i, __nv_bfloat16 y) {
          key_s[i] = y;
          if (slot >= 0) in.cache.key_pool[pool_at + i] = y;
        });
      }
    }
    __syncthreads();  // the rows in shared memory, for every warp of the block
    return step_rows{q_s, key_s, value_s};
  };
  attend_in_cluster<head_dim, wide>(sh, kv, out, shared, after_wait);
}

template <int head_dim, bool wide>
static void launch_splits(const __nv_bfloat16* q, int q_stride, int seqs, const split_shape& sh,
                          const paged_kv_batch& kv, const split_results& results, cudaStream_t stream) {
  const dim3 grid((sh.splits + warps - 1) / warps, sh.kv_heads, seqs);
  launch_dependent(split_kernel<head_dim, wide>, grid, threads, 0, stream, q, q_stride, sh, kv, results);
}

template <int head_dim, bool wide>
static void launch_cluster(const __nv_bfloat16* q, int q_stride, int seqs, const split_shape& sh,
                           const paged_kv_batch& kv, __nv_bfloat16* out, cudaStream_t stream) {
  // 33344 bytes at head_dim 128, 66688 when wide: above the 48K a launch gets unasked.
  constexpr size_t shared = cluster_layout<head_dim, wide>::bytes;
  TROUPE_CUDA_CHECK(
      cudaFuncSetAttribute(cluster_kernel<head_dim, wide>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
  const int blocks = sh.splits / cluster_warps;
  launch_dependent_clusters(cluster_kernel<head_dim, wide>, dim3(blocks, sh.kv_heads, seqs), unsigned(blocks),
                            cluster_threads, shared, stream, q, q_stride, sh, kv, out);
}

template <int head_dim, bool wide>
static void launch_fused(const step_qkv& in, int seqs, const split_shape& sh, const paged_kv_batch& kv,
                         const inv_freq_table& inv_freq, __nv_bfloat16* out, cudaStream_t stream) {
  // 40000 bytes at head_dim 128, 75392 when wide.
  constexpr size_t shared = fused_layout<head_dim, wide>::bytes;
  auto kernel = partial_rotation(inv_freq, head_dim) ? fused_cluster_kernel<head_dim, wide, true>
                                                     : fused_cluster_kernel<head_dim, wide, false>;
  TROUPE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
  const int blocks = sh.splits / cluster_warps;
  launch_dependent_clusters(kernel, dim3(blocks, sh.kv_heads, seqs), unsigned(blocks), cluster_threads, shared, stream,
                            in, sh, kv, out, inv_freq);
}

// The kernels' instantiations: f(shape<head_dim, wide>{}) for the call's shape.
template <int head_dim_, bool wide_>
struct shape {
  static constexpr int head_dim = head_dim_;
  static constexpr bool wide = wide_;
};

template <class F>
static void with_shape(int head_dim, int group, F&& f) {
  if (head_dim == 64)
    group > 8 ? f(shape<64, true>{}) : f(shape<64, false>{});
  else if (head_dim == 128)
    group > 8 ? f(shape<128, true>{}) : f(shape<128, false>{});
  else
    group > 8 ? f(shape<256, true>{}) : f(shape<256, false>{});
}

static void check_attention(const __nv_bfloat16* q, int q_stride, int seqs, int heads, int kv_heads, int head_dim,
                            const paged_kv_batch& kv) {
  TROUPE_CHECK(seqs >= 0 && kv_heads > 0 && heads % kv_heads == 0, "heads must be a multiple of kv_heads");
  TROUPE_CHECK(heads / kv_heads <= max_group, "at most 16 query heads per KV head");
  TROUPE_CHECK(head_dim == 64 || head_dim == 128 || head_dim == 256, "head_dim must be 64, 128 or 256");
  TROUPE_CHECK(q_stride >= heads * head_dim && q_stride % 8 == 0, "query rows overlap or are unaligned");
  TROUPE_CHECK(kv.block_size > 0 && kv.max_blocks > 0 && kv.max_seq_len > 0, "bad KV layout");
  TROUPE_CHECK(int64_t(kv.max_blocks) * kv.block_size >= kv.max_seq_len, "block table too short");
  TROUPE_CHECK(seqs <= 65535 && kv_heads <= 65535, "grid too large");
  TROUPE_CHECK(uintptr_t(q) % 16 == 0 && uintptr_t(kv.keys) % 16 == 0 && uintptr_t(kv.values) % 16 == 0,
               "pointers must be 16-byte aligned");
}

void paged_attention(const __nv_bfloat16* q, int q_stride, int seqs, int heads, int kv_heads, int head_dim,
                     const paged_kv_batch& kv, float* workspace, __nv_bfloat16* out, cudaStream_t stream) {
  check_attention(q, q_stride, seqs, heads, kv_heads, head_dim, kv);
  if (seqs == 0) return;
  const int group = heads / kv_heads;
  if (const int splits = plan_cluster(int64_t(seqs) * kv_heads, kv.max_seq_len); splits > 0) {
    const split_shape sh{heads, kv_heads, group, splits};
    with_shape(head_dim, group, [&](auto s) {
      launch_cluster<decltype(s)::head_dim, decltype(s)::wide>(q, q_stride, seqs, sh, kv, out, stream);
    });
    return;
  }
  const int splits = plan_splits(seqs, kv_heads, kv.max_seq_len);
  const split_results results = results_of(workspace, seqs, heads, head_dim, splits);
  const split_shape sh{heads, kv_heads, group, splits};
  with_shape(head_dim, group, [&](auto s) {
    launch_splits<decltype(s)::head_dim, decltype(s)::wide>(q, q_stride, seqs, sh, kv, results, stream);
  });
  // Eight floats past the splits: the unrolled weighted sum may load past `used` (shared
  // loads cannot fault, so the compiler may speculate them), and they must stay inside.
  launch_dependent(merge_kernel, dim3(heads, seqs), threads, sizeof(float) * (size_t(splits) + 8), stream, heads,
                   head_dim, kv.seq_lens, splits, results, out);
}

void decode_attention(__nv_bfloat16* q, const __nv_bfloat16* k, const float* q_norm, const float* k_norm, float eps,
                      int seqs, int heads, int kv_heads, int head_dim, int q_stride, int k_stride, const int* positions,
                      float theta, int rotary_dim, const kv_cache_target& cache, const paged_kv_batch& kv,
                      float* workspace, __nv_bfloat16* out, cudaStream_t stream) {
  check_attention(q, q_stride, seqs, heads, kv_heads, head_dim, kv);
  TROUPE_CHECK(cache.key_pool == kv.keys && cache.value_pool == kv.values,
               "the step's keys and values must go to the pools it attends over");
  TROUPE_CHECK(rotary_dim >= 0 && rotary_dim <= head_dim && rotary_dim % 2 == 0,
               "rotary_dim must be even and at most head_dim");
  const int splits = plan_cluster(int64_t(seqs) * kv_heads, kv.max_seq_len);
  if (seqs == 0 || splits == 0) {
    qk_norm_rope(q, k, q_norm, k_norm, eps, seqs, heads, kv_heads, head_dim, q_stride, k_stride, positions, theta,
                 rotary_dim, cache, stream);
    paged_attention(q, q_stride, seqs, heads, kv_heads, head_dim, kv, workspace, out, stream);
    return;
  }
  TROUPE_CHECK(k_stride >= kv_heads * head_dim, "rows overlap");
  TROUPE_CHECK(cache.v != nullptr && cache.slots != nullptr && cache.v_stride >= kv_heads * head_dim,
               "a KV cache target needs v rows, slots and both pools");
  const int group = heads / kv_heads;
  const split_shape sh{heads, kv_heads, group, splits};
  const step_qkv in{q, q_stride, k, k_stride, q_norm, k_norm, eps, positions, cache};
  const inv_freq_table inv_freq = rope_inv_freq(theta, head_dim, rotary_dim);
  with_shape(head_dim, group, [&](auto s) {
    launch_fused<decltype(s)::head_dim, decltype(s)::wide>(in, seqs, sh, kv, inv_freq, out, stream);
  });
}

}  // namespace troupe::cuda
