#include "kernels/cuda/qk_norm_rope.cuh"

#include <algorithm>

#include "base/check.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/dependent_launch.cuh"
#include "kernels/cuda/qk_norm_rope_row.cuh"

namespace troupe::cuda {

static constexpr int warps_per_block = 4;
// Enough warps to fill an H200 about twice: a larger batch gives each warp several rows.
static constexpr int warps_wanted = 16384;
static constexpr int most_rows_per_warp = 16;

// Warp w takes (token, head) rows [w * rows_per_warp, ...), q heads first then k heads: the
// normed row is staged in shared memory so each lane can rotate pairs half a head apart. A
// k head's row also copies the token's value row of that head into the value pool. With
// several rows a warp loads the next row while it computes one, and reuses its token's
// rotation: one row a warp left a 4,096-token prefill latency-bound at 98 us.
template <int most, bool partial>
static __global__ void qk_norm_rope_kernel(__nv_bfloat16* q, const __nv_bfloat16* k, const float* q_norm,
                                           const float* k_norm, float eps, int tokens, int heads, int kv_heads,
                                           int head_dim, int q_stride, int k_stride, const int* positions,
                                           const __grid_constant__ inv_freq_table inv_freq, kv_cache_target cache,
                                           int rows_per_warp) {
  __shared__ float rows[warps_per_block][most];
  const lane_elements<most> q_weight = load_lane_elements<most>(q_norm, head_dim);
  const lane_elements<most> k_weight = load_lane_elements<most>(k_norm, head_dim);
  begin_dependent();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int per_token = heads + kv_heads;
  const int first = (blockIdx.x * warps_per_block + warp) * rows_per_warp;
  const int end = min(first + rows_per_warp, tokens * per_token);
  auto source = [&](int row) {
    const int t = row / per_token, h = row % per_token;
    return h < heads ? q + size_t(t) * q_stride + size_t(h) * head_dim
                     : k + size_t(t) * k_stride + size_t(h - heads) * head_dim;
  };
  lane_elements<most> x{};
  if (first < end) x = load_lane_elements<most>(source(first), head_dim);
  lane_rotation<most, partial> rotation;
  for (int row = first, token = -1; row < end; ++row) {
    lane_elements<most> next{};
    if (row + 1 < end) next = load_lane_elements<most>(source(row + 1), head_dim);  // another row: never written here
    const int t = row / per_token, h = row % per_token;
    const bool is_q = h < heads;
    const int slot = is_q ? 0 : cache.slots[t];
    if (slot >= 0) {  // else a padding row of a decode graph: its key and value go nowhere
      const size_t pool_at = is_q ? 0 : size_t(slot) * kv_heads * head_dim + size_t(h - heads) * head_dim;
      __nv_bfloat16* to = is_q ? q + size_t(t) * q_stride + size_t(h) * head_dim : cache.key_pool + pool_at;
      if (!is_q) {
        const __nv_bfloat16* v = cache.v + size_t(t) * cache.v_stride + size_t(h - heads) * head_dim;
        for (int i = lane; i < head_dim; i += 32) cache.value_pool[pool_at + i] = v[i];
      }
      if (t != token) rotation = rotation_of<most, partial>(positions[t], inv_freq, head_dim), token = t;
      norm_rope_row(x, is_q ? q_weight : k_weight, eps, head_dim, rotation, rows[warp],
                    [&](int i, __nv_bfloat16 y) { to[i] = y; });
    }
    x = next;
  }
}

static void launch(__nv_bfloat16* q, const __nv_bfloat16* k, const float* q_norm, const float* k_norm, float eps,
                   int tokens, int heads, int kv_heads, int head_dim, int q_stride, int k_stride, const int* positions,
                   const inv_freq_table& inv_freq, const kv_cache_target& cache, cudaStream_t stream) {
  const int rows = tokens * (heads + kv_heads);
  const int rows_per_warp = std::clamp(rows / warps_wanted, 1, most_rows_per_warp);
  const int warps = (rows + rows_per_warp - 1) / rows_per_warp;
  const int blocks = (warps + warps_per_block - 1) / warps_per_block;
  // The same arithmetic on the same lanes either way: the bits do not depend on `most`.
  const bool partial = partial_rotation(inv_freq, head_dim);
  auto kernel =
      head_dim <= 128
          ? (partial ? qk_norm_rope_kernel<128, true> : qk_norm_rope_kernel<128, false>)
          : (partial ? qk_norm_rope_kernel<rope_max_head_dim, true> : qk_norm_rope_kernel<rope_max_head_dim, false>);
  launch_dependent(kernel, blocks, warps_per_block * 32, 0, stream, q, k, q_norm, k_norm, eps, tokens, heads, kv_heads,
                   head_dim, q_stride, k_stride, positions, inv_freq, cache, rows_per_warp);
}

void qk_norm_rope(__nv_bfloat16* q, const __nv_bfloat16* k, const float* q_norm, const float* k_norm, float eps,
                  int tokens, int heads, int kv_heads, int head_dim, int q_stride, int k_stride, const int* positions,
                  float theta, int rotary_dim, const kv_cache_target& cache, cudaStream_t stream) {
  TROUPE_CHECK(tokens >= 0 && heads > 0 && kv_heads > 0, "bad shape");
  TROUPE_CHECK(head_dim > 0 && head_dim % 2 == 0 && head_dim <= rope_max_head_dim,
               "head_dim must be even and at most 256");
  TROUPE_CHECK(rotary_dim >= 0 && rotary_dim <= head_dim && rotary_dim % 2 == 0,
               "rotary_dim must be even and at most head_dim");
  TROUPE_CHECK(q_stride >= heads * head_dim && k_stride >= kv_heads * head_dim, "rows overlap");
  TROUPE_CHECK(cache.v != nullptr && cache.slots != nullptr && cache.key_pool != nullptr &&
                   cache.value_pool != nullptr && cache.v_stride >= kv_heads * head_dim,
               "a KV cache target needs v rows, slots and both pools");
  TROUPE_CHECK(int64_t(tokens) * (heads + kv_heads) < (int64_t(1) << 31), "too many rows");
  if (tokens == 0) return;
  launch(q, k, q_norm, k_norm, eps, tokens, heads, kv_heads, head_dim, q_stride, k_stride, positions,
         rope_inv_freq(theta, head_dim, rotary_dim), cache, stream);
}

}  // namespace troupe::cuda
