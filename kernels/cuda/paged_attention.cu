#include "kernels/cuda/paged_attention.cuh"

#include <cmath>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"

namespace troupe::cuda {

static constexpr int split = paged_attention_split;
static constexpr int threads = 128;
static constexpr int warps = threads / 32;
static constexpr int max_head_dim = 256;
static constexpr int per_lane = max_head_dim / 32;
static constexpr size_t max_shared = 48 * 1024;

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

// Block (split, kv head, sequence): scores for the group's query heads against up to
// `split` positions (a warp per position, K read once for the whole group), a softmax
// within the split, then the weighted sum of V (threads over group x head_dim).
static __global__ void split_kernel(const __nv_bfloat16* q, int q_stride, int heads, int kv_heads, int head_dim,
                                    paged_kv_batch kv, int splits, split_results results) {
  extern __shared__ float shared[];
  const int group = heads / kv_heads;
  float* q_s = shared;                        // [group, head_dim], scaled
  float* p_s = q_s + group * head_dim;        // [group, split]: scores, then exp
  int* slot_s = reinterpret_cast<int*>(p_s + group * split);  // [split]

  const int s = blockIdx.z, kvh = blockIdx.y, first = blockIdx.x * split;
  const int len = kv.seq_lens[s];
  if (first >= len) return;
  const int n = min(split, len - first);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const size_t row = size_t(kv_heads) * head_dim;
  const float scale = rsqrtf(float(head_dim));

  for (int i = threadIdx.x; i < group * head_dim; i += threads)
    q_s[i] = __bfloat162float(q[size_t(s) * q_stride + size_t(kvh) * group * head_dim + i]) * scale;
  __syncthreads();

  for (int j = warp; j < n; j += warps) {
    const int p = first + j;
    const int slot = kv.block_tables[size_t(s) * kv.max_blocks + p / kv.block_size] * kv.block_size +
                     p % kv.block_size;
    if (lane == 0) slot_s[j] = slot;
    const __nv_bfloat16* k = kv.keys + size_t(slot) * row + size_t(kvh) * head_dim;
    float k_r[per_lane];
#pragma unroll
    for (int c = 0; c < per_lane; ++c) {
      const int d = lane + 32 * c;
      k_r[c] = d < head_dim ? __bfloat162float(k[d]) : 0.0f;
    }
    for (int g = 0; g < group; ++g) {
      float dot = 0.0f;
#pragma unroll
      for (int c = 0; c < per_lane; ++c) {
        const int d = lane + 32 * c;
        if (d < head_dim) dot += q_s[g * head_dim + d] * k_r[c];
      }
      dot = warp_sum(dot);
      if (lane == 0) p_s[g * split + j] = dot;
    }
  }
  __syncthreads();

  const size_t out_row = (size_t(s) * heads + kvh * group) * splits + blockIdx.x;
  for (int g = warp; g < group; g += warps) {
    float* p = p_s + g * split;
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
      results.max[out_row + size_t(g) * splits] = m;
      results.sum[out_row + size_t(g) * splits] = l;
    }
  }
  __syncthreads();

  for (int i = threadIdx.x; i < group * head_dim; i += threads) {
    const int g = i / head_dim, d = i % head_dim;
    const float* p = p_s + g * split;
    const __nv_bfloat16* v = kv.values + size_t(kvh) * head_dim + d;
    float acc = 0.0f;
    for (int j = 0; j < n; ++j) acc += p[j] * __bfloat162float(v[size_t(slot_s[j]) * row]);
    results.out[(out_row + size_t(g) * splits) * head_dim + d] = acc;
  }
}

// Block (head, sequence): rescale each split to the global maximum and normalise.
static __global__ void merge_kernel(int heads, int head_dim, const int* seq_lens, int splits,
                                    split_results results, __nv_bfloat16* out) {
  const int s = blockIdx.y, h = blockIdx.x;
  const int used = (seq_lens[s] + split - 1) / split;
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

static void launch(const __nv_bfloat16* q, int q_stride, int seqs, int heads, int kv_heads, int head_dim,
                   const paged_kv_batch& kv, float* workspace, __nv_bfloat16* out,
                   size_t shared, cudaStream_t stream) {
  const int splits = (kv.max_seq_len + split - 1) / split;
  const split_results results = results_of(workspace, seqs, heads, head_dim, splits);
  split_kernel<<<dim3(splits, kv_heads, seqs), threads, shared, stream>>>(
      q, q_stride, heads, kv_heads, head_dim, kv, splits, results);
  TROUPE_CUDA_CHECK(cudaGetLastError());
  merge_kernel<<<dim3(heads, seqs), threads, 0, stream>>>(heads, head_dim, kv.seq_lens, splits,
                                                          results, out);
  TROUPE_CUDA_CHECK(cudaGetLastError());
}

void paged_attention(const __nv_bfloat16* q, int q_stride, int seqs, int heads, int kv_heads, int head_dim,
                     const paged_kv_batch& kv, float* workspace, __nv_bfloat16* out,
                     cudaStream_t stream) {
  TROUPE_CHECK(seqs >= 0 && kv_heads > 0 && heads % kv_heads == 0, "heads must be a multiple of kv_heads");
  TROUPE_CHECK(head_dim > 0 && head_dim <= max_head_dim, "head_dim must be at most 256");
  TROUPE_CHECK(q_stride >= heads * head_dim, "query rows overlap");
  TROUPE_CHECK(kv.block_size > 0 && kv.max_blocks > 0 && kv.max_seq_len > 0, "bad KV layout");
  TROUPE_CHECK(int64_t(kv.max_blocks) * kv.block_size >= kv.max_seq_len, "block table too short");
  TROUPE_CHECK(seqs <= 65535 && kv_heads <= 65535, "grid too large");
  const int group = heads / kv_heads;
  const size_t shared = sizeof(float) * (size_t(group) * (head_dim + split) + split);
  TROUPE_CHECK(shared <= max_shared, "query group too large for one block");
  if (seqs == 0) return;
  launch(q, q_stride, seqs, heads, kv_heads, head_dim, kv, workspace, out, shared, stream);
}

}  // namespace troupe::cuda
