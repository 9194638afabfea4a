#include "kernels/cuda/qk_norm_rope.cuh"

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/qk_norm_rope_row.cuh"

namespace troupe::cuda {

static constexpr int warps_per_block = 4;

// One warp per (token, head) row, q heads first then k heads: the normed row is staged in
// shared memory so each lane can rotate pairs half a head apart. A k head's warp also
// copies the token's value row of that head into the value pool.
static __global__ void qk_norm_rope_kernel(__nv_bfloat16* q, const __nv_bfloat16* k, const float* q_norm,
                                           const float* k_norm, float eps, int tokens, int heads,
                                           int kv_heads, int head_dim, int q_stride, int k_stride,
                                           const int* positions, const __grid_constant__ inv_freq_table inv_freq,
                                           kv_cache_target cache) {
  __shared__ float rows[warps_per_block][rope_max_head_dim];
  begin_dependent();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row = blockIdx.x * warps_per_block + warp;
  const int per_token = heads + kv_heads;
  if (row >= tokens * per_token) return;
  const int t = row / per_token, h = row % per_token;
  const bool is_q = h < heads;
  const int slot = is_q ? 0 : cache.slots[t];
  if (slot < 0) return;  // a padding row of a decode graph: its key and value go nowhere
  const size_t pool_at = is_q ? 0 : size_t(slot) * kv_heads * head_dim + size_t(h - heads) * head_dim;
  const __nv_bfloat16* x = is_q ? q + size_t(t) * q_stride + size_t(h) * head_dim
                                : k + size_t(t) * k_stride + size_t(h - heads) * head_dim;
  __nv_bfloat16* to = is_q ? q + size_t(t) * q_stride + size_t(h) * head_dim : cache.key_pool + pool_at;
  if (!is_q) {
    const __nv_bfloat16* v = cache.v + size_t(t) * cache.v_stride + size_t(h - heads) * head_dim;
    for (int i = lane; i < head_dim; i += 32) cache.value_pool[pool_at + i] = v[i];
  }
  constexpr int most = rope_max_head_dim;
  norm_rope_row(load_lane_elements<most>(x, head_dim), load_lane_elements<most>(is_q ? q_norm : k_norm, head_dim),
                eps, head_dim, rotation_of<most>(positions[t], inv_freq, head_dim), rows[warp],
                [&](int i, __nv_bfloat16 y) { to[i] = y; });
}

static void launch(__nv_bfloat16* q, const __nv_bfloat16* k, const float* q_norm, const float* k_norm,
                   float eps, int tokens, int heads, int kv_heads, int head_dim, int q_stride,
                   int k_stride, const int* positions, const inv_freq_table& inv_freq,
                   const kv_cache_target& cache, cudaStream_t stream) {
  const int rows = tokens * (heads + kv_heads);
  const int blocks = (rows + warps_per_block - 1) / warps_per_block;
  launch_dependent(qk_norm_rope_kernel, blocks, warps_per_block * 32, 0, stream, q, k, q_norm, k_norm, eps,
                   tokens, heads, kv_heads, head_dim, q_stride, k_stride, positions, inv_freq, cache);
}

void qk_norm_rope(__nv_bfloat16* q, const __nv_bfloat16* k, const float* q_norm, const float* k_norm,
                  float eps, int tokens, int heads, int kv_heads, int head_dim, int q_stride,
                  int k_stride, const int* positions, float theta, const kv_cache_target& cache,
                  cudaStream_t stream) {
  TROUPE_CHECK(tokens >= 0 && heads > 0 && kv_heads > 0, "bad shape");
  TROUPE_CHECK(head_dim > 0 && head_dim % 2 == 0 && head_dim <= rope_max_head_dim,
               "head_dim must be even and at most 256");
  TROUPE_CHECK(q_stride >= heads * head_dim && k_stride >= kv_heads * head_dim, "rows overlap");
  TROUPE_CHECK(cache.v != nullptr && cache.slots != nullptr && cache.key_pool != nullptr &&
                   cache.value_pool != nullptr && cache.v_stride >= kv_heads * head_dim,
               "a KV cache target needs v rows, slots and both pools");
  TROUPE_CHECK(int64_t(tokens) * (heads + kv_heads) < (int64_t(1) << 31), "too many rows");
  if (tokens == 0) return;
  launch(q, k, q_norm, k_norm, eps, tokens, heads, kv_heads, head_dim, q_stride, k_stride, positions,
         rope_inv_freq(theta, head_dim), cache, stream);
}

}  // namespace troupe::cuda
