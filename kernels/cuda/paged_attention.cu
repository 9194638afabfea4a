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
static constexpr int min_split_len = 64;
static constexpr int max_split_len = 1024;
static constexpr int max_splits = 32;

int paged_attention_splits(int max_seq_len) {
  const int by_min = (max_seq_len + min_split_len - 1) / min_split_len;
  const int by_max = (max_seq_len + max_split_len - 1) / max_split_len;
  return std::max(std::min(by_min, max_splits), std::max(by_max, 1));
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
};

// Block (split, kv head, sequence).
static __global__ void __launch_bounds__(threads)
split_kernel(const __nv_bfloat16* q, int q_stride, split_shape sh, paged_kv_batch kv, split_results results) {
  extern __shared__ float shared[];
  const int group = sh.group, hd = sh.head_dim, split_len = sh.split_len;
  float* q_s = shared;                       // [group, head_dim], scaled
  float* p_s = q_s + group * hd;             // [group, split_len]: scores, then exp
  float* part_s = p_s + group * split_len;   // [threads / pairs, group, head_dim] partial sums
  int* slot_s = reinterpret_cast<int*>(part_s + (hd / 2 <= threads ? threads / (hd / 2) : 1) * group * hd);

  const int s = blockIdx.z, kvh = blockIdx.y, first = blockIdx.x * split_len;
  const int len = kv.seq_lens[s];
  if (first >= len) return;
  const int n = min(split_len, len - first);
  const size_t row = size_t(sh.kv_heads) * hd;
  const float scale = rsqrtf(float(hd));

  for (int i = threadIdx.x; i < group * hd; i += threads)
    q_s[i] = __bfloat162float(q[size_t(s) * q_stride + size_t(kvh) * group * hd + i]) * scale;
  __syncthreads();

  // Scores: a thread per position, its key row read in 16-byte pieces.
  for (int j = threadIdx.x; j < n; j += threads) {
    const int p = first + j;
    const int slot = kv.block_tables[size_t(s) * kv.max_blocks + p / kv.block_size] * kv.block_size + p % kv.block_size;
    slot_s[j] = slot;
    const __nv_bfloat16* k = kv.keys + size_t(slot) * row + size_t(kvh) * hd;
    float acc[max_group];
#pragma unroll
    for (int g = 0; g < max_group; ++g) acc[g] = 0.0f;
    for (int d = 0; d < hd; d += 8) {
      float kf[8];
      if (hd % 8 == 0) {
        const uint4 raw = *reinterpret_cast<const uint4*>(k + d);
        const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const float2 f = __bfloat1622float2(pairs[i]);
          kf[2 * i] = f.x;
          kf[2 * i + 1] = f.y;
        }
      } else {
#pragma unroll
        for (int i = 0; i < 8; ++i) kf[i] = d + i < hd ? __bfloat162float(k[d + i]) : 0.0f;
      }
#pragma unroll
      for (int g = 0; g < max_group; ++g) {
        if (g >= group) break;
        const float* qg = q_s + g * hd + d;
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[g] += d + i < hd ? qg[i] * kf[i] : 0.0f;
      }
    }
#pragma unroll
    for (int g = 0; g < max_group; ++g)
      if (g < group) p_s[g * split_len + j] = acc[g];
  }
  __syncthreads();

  const size_t out_row = (size_t(s) * sh.heads + size_t(kvh) * group) * sh.splits + blockIdx.x;
  for (int g = threadIdx.x / 32; g < group; g += warps) {
    float* p = p_s + g * split_len;
    const int lane = threadIdx.x % 32;
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

  // Values: thread (part, pair) sums positions part, part + parts, ... for one pair of
  // dimensions and every head of the group; the parts are then added in a fixed order.
  const int pairs = hd / 2;
  const int parts = pairs <= threads ? threads / pairs : 1;
  const int part = pairs <= threads ? threadIdx.x / pairs : 0;
  if (part < parts) {
    for (int d2 = pairs <= threads ? threadIdx.x % pairs : threadIdx.x; d2 < pairs; d2 += threads) {
      float acc0[max_group], acc1[max_group];
#pragma unroll
      for (int g = 0; g < max_group; ++g) acc0[g] = acc1[g] = 0.0f;
      const __nv_bfloat16* v = kv.values + size_t(kvh) * hd + 2 * d2;
#pragma unroll 4
      for (int j = part; j < n; j += parts) {
        const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(v + size_t(slot_s[j]) * row));
#pragma unroll
        for (int g = 0; g < max_group; ++g) {
          if (g >= group) break;
          const float w = p_s[g * split_len + j];
          acc0[g] += w * f.x;
          acc1[g] += w * f.y;
        }
      }
#pragma unroll
      for (int g = 0; g < max_group; ++g) {
        if (g >= group) break;
        part_s[(part * group + g) * hd + 2 * d2] = acc0[g];
        part_s[(part * group + g) * hd + 2 * d2 + 1] = acc1[g];
      }
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < group * hd; i += threads) {
    float acc = 0.0f;
    for (int pt = 0; pt < parts; ++pt) acc += part_s[pt * group * hd + i];
    const int g = i / hd, d = i % hd;
    results.out[(out_row + size_t(g) * sh.splits) * hd + d] = acc;
  }
}

// Block (head, sequence): rescale each split to the global maximum and normalise.
static __global__ void merge_kernel(int heads, int head_dim, const int* seq_lens, int splits, int split_len,
                                    split_results results, __nv_bfloat16* out) {
  const int s = blockIdx.y, h = blockIdx.x;
  const int used = (seq_lens[s] + split_len - 1) / split_len;
  const size_t base = (size_t(s) * heads + h) * splits;
  float m = -INFINITY;
  for (int i = 0; i < used; ++i) m = fmaxf(m, results.max[base + i]);
  float l = 0.0f;
  for (int i = 0; i < used; ++i) l += results.sum[base + i] * expf(results.max[base + i] - m);
  for (int d = threadIdx.x; d < head_dim; d += threads) {
    float acc = 0.0f;
    for (int i = 0; i < used; ++i)
      acc += results.out[(base + i) * head_dim + d] * expf(results.max[base + i] - m);
    out[(size_t(s) * heads + h) * head_dim + d] = __float2bfloat16(acc / l);
  }
}

void paged_attention(const __nv_bfloat16* q, int q_stride, int seqs, int heads, int kv_heads, int head_dim,
                     const paged_kv_batch& kv, float* workspace, __nv_bfloat16* out,
                     cudaStream_t stream) {
  TROUPE_CHECK(seqs >= 0 && kv_heads > 0 && heads % kv_heads == 0, "heads must be a multiple of kv_heads");
  TROUPE_CHECK(heads / kv_heads <= max_group, "at most 16 query heads per KV head");
  TROUPE_CHECK(head_dim > 0 && head_dim % 2 == 0 && head_dim <= max_head_dim, "head_dim must be even and at most 256");
  TROUPE_CHECK(q_stride >= heads * head_dim, "query rows overlap");
  TROUPE_CHECK(kv.block_size > 0 && kv.max_blocks > 0 && kv.max_seq_len > 0, "bad KV layout");
  TROUPE_CHECK(int64_t(kv.max_blocks) * kv.block_size >= kv.max_seq_len, "block table too short");
  TROUPE_CHECK(seqs <= 65535 && kv_heads <= 65535, "grid too large");
  if (seqs == 0) return;
  const int splits = paged_attention_splits(kv.max_seq_len);
  const int split_len = (kv.max_seq_len + splits - 1) / splits;
  const int group = heads / kv_heads, pairs = head_dim / 2;
  const int parts = pairs <= threads ? threads / pairs : 1;
  const size_t shared = sizeof(float) * (size_t(group) * head_dim + size_t(group) * split_len +
                                         size_t(parts) * group * head_dim) +
                        sizeof(int) * size_t(split_len);
  TROUPE_CUDA_CHECK(cudaFuncSetAttribute(split_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
  const split_results results = results_of(workspace, seqs, heads, head_dim, splits);
  const split_shape sh{heads, kv_heads, head_dim, group, split_len, splits};
  split_kernel<<<dim3(splits, kv_heads, seqs), threads, shared, stream>>>(q, q_stride, sh, kv, results);
  TROUPE_CUDA_CHECK(cudaGetLastError());
  merge_kernel<<<dim3(heads, seqs), threads, 0, stream>>>(heads, head_dim, kv.seq_lens, splits, split_len, results, out);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace troupe::cuda
