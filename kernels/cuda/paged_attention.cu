#include "kernels/cuda/paged_attention.cuh"

#include <algorithm>
#include <cmath>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"

namespace troupe::cuda {

static constexpr int threads = 128;
static constexpr int warps = threads / 32;
static constexpr int max_head_dim = 256;
static constexpr int max_group = 16;
static constexpr int min_split_len = 16;
static constexpr int max_split_len = 1024;
static constexpr int target_blocks = 8192;
static constexpr int max_splits_wanted = 128;  // the merge reads every split

int paged_attention_splits(int seqs, int kv_heads, int max_seq_len) {
  const int wanted = std::min((target_blocks + seqs * kv_heads - 1) / (seqs * kv_heads), max_splits_wanted);
  const int most = (max_seq_len + min_split_len - 1) / min_split_len;
  const int least = (max_seq_len + max_split_len - 1) / max_split_len;
  return std::max(std::min(wanted, most), std::max(least, 1));
}

// seqs x splits is at most target_blocks / kv_heads + seqs * (least + 1) for any batch of
// up to `seqs` sequences.
size_t paged_attention_workspace_floats(int seqs, int heads, int kv_heads, int head_dim, int max_seq_len) {
  const size_t least = size_t(max_seq_len + max_split_len - 1) / max_split_len;
  const size_t rows = size_t(target_blocks + kv_heads - 1) / size_t(kv_heads) + size_t(seqs) * (least + 2);
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
// and the sums of exponentials, each [seqs, heads, splits].
struct split_results {
  float* out;
  float* max;
  float* sum;
};

static __host__ __device__ split_results results_of(float* workspace, int seqs, int heads,
                                                    int head_dim, int splits) {
  const size_t rows = size_t(seqs) * heads * splits;
  return {workspace, workspace + rows * head_dim, workspace + rows * (head_dim + 1)};
}

struct split_shape {
  int heads, kv_heads, head_dim, group, split_len, splits;
  int lanes_per_row;  // lanes sharing one key or value row, 8 dimensions (16 bytes) each
};

// Block (split, kv head, sequence). For the scores, lanes work in teams of lanes_per_row
// on one position: each lane holds 8 dimensions, so every key row is read in 16-byte
// pieces by neighbouring lanes, and a warp covers 32 / lanes_per_row positions at a time.
static __global__ void __launch_bounds__(threads)
split_kernel(const __nv_bfloat16* q, int q_stride, split_shape sh, paged_kv_batch kv, split_results results) {
  extern __shared__ float shared[];
  const int group = sh.group, hd = sh.head_dim, split_len = sh.split_len, lpr = sh.lanes_per_row;
  const int rows_per_warp = 32 / lpr, rows_per_pass = warps * rows_per_warp;
  float* q_s = shared;                                   // [group, head_dim], scaled
  float* p_s = q_s + group * hd;                         // [group, split_len]: scores, then exp
  int* slot_s = reinterpret_cast<int*>(p_s + group * split_len);  // [split_len]

  const int s = blockIdx.z, kvh = blockIdx.y, first = blockIdx.x * split_len;
  const int len = kv.seq_lens[s];
  if (first >= len) return;
  const int n = min(split_len, len - first);
  const size_t row = size_t(sh.kv_heads) * hd;
  const float scale = rsqrtf(float(hd));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int team = warp * rows_per_warp + lane / lpr, piece = lane % lpr, dim = piece * 8;
  const bool active = dim < hd;

  for (int i = threadIdx.x; i < group * hd; i += threads)
    q_s[i] = __bfloat162float(q[size_t(s) * q_stride + size_t(kvh) * group * hd + i]) * scale;
  for (int j = threadIdx.x; j < n; j += threads) {
    const int p = first + j;
    slot_s[j] = kv.block_tables[size_t(s) * kv.max_blocks + p / kv.block_size] * kv.block_size + p % kv.block_size;
  }
  __syncthreads();

  // Scores: a team per position, partial dot products over its lanes' dimensions, summed
  // across the team with shuffles (every lane takes part, so the masks stay full).
  for (int j0 = 0; j0 < n; j0 += rows_per_pass) {
    const int j = j0 + team;
    float k8[8] = {};
    if (j < n && active) {
      const uint4 raw = *reinterpret_cast<const uint4*>(kv.keys + size_t(slot_s[j]) * row + size_t(kvh) * hd + dim);
      const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 f = __bfloat1622float2(pairs[i]);
        k8[2 * i] = f.x;
        k8[2 * i + 1] = f.y;
      }
    }
    for (int g = 0; g < group; ++g) {
      float acc = 0.0f;
      if (active) {
        const float* qg = q_s + g * hd + dim;
#pragma unroll
        for (int i = 0; i < 8; ++i) acc += qg[i] * k8[i];
      }
      for (int offset = lpr / 2; offset > 0; offset /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
      if (piece == 0 && j < n) p_s[g * split_len + j] = acc;
    }
  }
  __syncthreads();

  const size_t out_row = (size_t(s) * sh.heads + size_t(kvh) * group) * sh.splits + blockIdx.x;
  for (int g = warp; g < group; g += warps) {
    float* p = p_s + g * split_len;
    float m = -INFINITY;
    for (int j = lane; j < n; j += 32) m = fmaxf(m, p[j]);
    m = warp_max(m);
    float l = 0.0f;
    for (int j = lane; j < n; j += 32) {
      p[j] = expf(p[j] - m);
      l += p[j];
    }
    l = warp_sum(l);
    if (lane == 0) {
      results.max[out_row + size_t(g) * sh.splits] = m;
      results.sum[out_row + size_t(g) * sh.splits] = l;
    }
  }
  __syncthreads();

  // Values: thread (head g, piece) sums every position of the split for 8 dimensions; the
  // two half-warps of a warp read the same rows, so each row is fetched once.
  const int pieces = hd / 8;
  for (int task = threadIdx.x; task < group * pieces; task += threads) {
    const int g = task / pieces, at = (task % pieces) * 8;
    const float* p = p_s + g * split_len;
    const __nv_bfloat16* v = kv.values + size_t(kvh) * hd + at;
    float acc[8] = {};
#pragma unroll 8
    for (int j = 0; j < n; ++j) {
      const uint4 raw = *reinterpret_cast<const uint4*>(v + size_t(slot_s[j]) * row);
      const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
      const float w = p[j];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 f = __bfloat1622float2(pairs[i]);
        acc[2 * i] += w * f.x;
        acc[2 * i + 1] += w * f.y;
      }
    }
    float* o = results.out + (out_row + size_t(g) * sh.splits) * hd + at;
#pragma unroll
    for (int i = 0; i < 8; ++i) o[i] = acc[i];
  }
}

// Block (head, sequence): rescale each split to the global maximum and normalise. The
// splits' maxima and sums are read once, in parallel, into shared memory (a loop of
// dependent loads per thread would wait on memory once per split).
static __global__ void merge_kernel(int heads, int head_dim, const int* seq_lens, int splits, int split_len,
                                    split_results results, __nv_bfloat16* out) {
  extern __shared__ float weight_s[];  // [splits]: exp(max_i - max) / total
  __shared__ float reduce_s[warps];
  const int s = blockIdx.y, h = blockIdx.x;
  const int used = (seq_lens[s] + split_len - 1) / split_len;
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
    weight_s[i] = expf(results.max[base + i] - m);
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

void paged_attention(const __nv_bfloat16* q, int q_stride, int seqs, int heads, int kv_heads, int head_dim,
                     const paged_kv_batch& kv, float* workspace, __nv_bfloat16* out,
                     cudaStream_t stream) {
  TROUPE_CHECK(seqs >= 0 && kv_heads > 0 && heads % kv_heads == 0, "heads must be a multiple of kv_heads");
  TROUPE_CHECK(heads / kv_heads <= max_group, "at most 16 query heads per KV head");
  TROUPE_CHECK(head_dim > 0 && head_dim % 8 == 0 && head_dim <= max_head_dim,
               "head_dim must be a multiple of 8, at most 256");
  TROUPE_CHECK(q_stride >= heads * head_dim, "query rows overlap");
  TROUPE_CHECK(kv.block_size > 0 && kv.max_blocks > 0 && kv.max_seq_len > 0, "bad KV layout");
  TROUPE_CHECK(int64_t(kv.max_blocks) * kv.block_size >= kv.max_seq_len, "block table too short");
  TROUPE_CHECK(seqs <= 65535 && kv_heads <= 65535, "grid too large");
  if (seqs == 0) return;
  const int splits = paged_attention_splits(seqs, kv_heads, kv.max_seq_len);
  const int split_len = (kv.max_seq_len + splits - 1) / splits;
  const int group = heads / kv_heads;
  int lanes_per_row = 1;
  while (lanes_per_row * 8 < head_dim) lanes_per_row *= 2;
  const size_t shared = sizeof(float) * (size_t(group) * head_dim + size_t(group) * split_len) +
                        sizeof(int) * size_t(split_len);
  TROUPE_CUDA_CHECK(cudaFuncSetAttribute(split_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
  const split_results results = results_of(workspace, seqs, heads, head_dim, splits);
  const split_shape sh{heads, kv_heads, head_dim, group, split_len, splits, lanes_per_row};
  split_kernel<<<dim3(splits, kv_heads, seqs), threads, shared, stream>>>(q, q_stride, sh, kv, results);
  TROUPE_CUDA_CHECK(cudaGetLastError());
  merge_kernel<<<dim3(heads, seqs), threads, sizeof(float) * size_t(splits), stream>>>(
      heads, head_dim, kv.seq_lens, splits, split_len, results, out);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace troupe::cuda
