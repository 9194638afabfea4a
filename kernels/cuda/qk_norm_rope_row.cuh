#pragma once
// One (token, head) row of qk_norm_rope by one warp: the computation qk_norm_rope and the
// decode attention that fuses it share, so the key pool gets the same bits from either.
// Its parts split at the wait for the previous kernel: the row's weights and rotation
// depend on no earlier kernel and may be read before it, the row itself after.
#include <cmath>

#include <cuda_bf16.h>

namespace troupe::cuda {

inline constexpr int rope_max_head_dim = 256;

// inv_freq[i] = 1 / theta^(2i / rotary_dim) for the rotary_dim leading dims of a head that
// rotate (0: all head_dim; Qwen3.5 turns a quarter), pairs (i, i + half) for i < half =
// rotary_dim / 2; computed on the host with std::pow exactly as cpu::rope does, and passed
// by value (a __grid_constant__ kernel parameter) so a captured graph keeps it: no device
// buffer to own.
struct inv_freq_table {
  float v[rope_max_head_dim / 2];
  int half;
};

inline inv_freq_table rope_inv_freq(float theta, int head_dim, int rotary_dim) {
  const int rotary = rotary_dim > 0 ? rotary_dim : head_dim;
  inv_freq_table t{};
  t.half = rotary / 2;
  for (int i = 0; i < t.half; ++i) t.v[i] = 1.0f / std::pow(theta, float(2 * i) / float(rotary));
  return t;
}

// A lane's elements i = lane + 32 j of a row of up to max_dim, zero past head_dim.
template <int max_dim>
struct lane_elements {
  float v[max_dim / 32];
};

__device__ __forceinline__ float widen(float x) { return x; }
__device__ __forceinline__ float widen(__nv_bfloat16 x) { return __bfloat162float(x); }

// A bf16 row (the row itself) or an fp32 one (its norm's weights).
template <int max_dim, class T>
__device__ __forceinline__ lane_elements<max_dim> load_lane_elements(const T* row, int head_dim) {
  lane_elements<max_dim> e;
  const int lane = int(threadIdx.x) % 32;
#pragma unroll
  for (int j = 0; j < max_dim / 32; ++j) {
    const int i = lane + 32 * j;
    e.v[j] = i < head_dim ? widen(row[i]) : 0.0f;
  }
  return e;
}

// sin and cos of position * inv_freq[i] for a lane's pairs (i, i + half), i = lane + 32 j.
// Partial (rotary_dim < head_dim) is a template choice: with full rotation half is
// head_dim / 2, a constant wherever head_dim is one (the fused decode kernel), and batch-1
// decode lost 2.5% on the H200 when half came from the table at run time.
template <int max_dim, bool partial>
struct lane_rotation {
  float sin[max_dim / 64], cos[max_dim / 64];
  int half;
};

// Whether the table turns fewer than all of head_dim's dims.
inline bool partial_rotation(const inv_freq_table& inv_freq, int head_dim) { return 2 * inv_freq.half != head_dim; }

template <int max_dim, bool partial>
__device__ __forceinline__ lane_rotation<max_dim, partial> rotation_of(int position, const inv_freq_table& inv_freq,
                                                                       int head_dim) {
  lane_rotation<max_dim, partial> r;
  r.half = partial ? inv_freq.half : head_dim / 2;
  const int lane = int(threadIdx.x) % 32;
#pragma unroll
  for (int j = 0; j < max_dim / 64; ++j) {
    const int i = lane + 32 * j;
    r.sin[j] = 0.0f;
    r.cos[j] = 1.0f;
    if (i < r.half) sincosf(__fmul_rn(float(position), inv_freq.v[i]), &r.sin[j], &r.cos[j]);
  }
  return r;
}

// RMSNorm of a row x (a lane's elements, as load_lane_elements gives them) by `weight` (the
// same), then rotate-half RoPE of its leading 2 * rotation.half dims: store(i, y[i]) for
// every i < head_dim, by the lane that holds pair i % half (or element i, past the rotated
// dims). buf: head_dim floats of shared memory of the warp's own.
// Every lane of the warp calls it. The arithmetic is spelled out in _rn intrinsics so no
// caller's inlining can contract it differently: the bits do not depend on the kernel.
template <int max_dim, bool partial, class Store>
__device__ __forceinline__ void norm_rope_row(const lane_elements<max_dim>& x, const lane_elements<max_dim>& weight,
                                              float eps, int head_dim, const lane_rotation<max_dim, partial>& rotation,
                                              float* buf, Store store) {
  const int lane = int(threadIdx.x) % 32;
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < max_dim / 32; ++j)
    if (lane + 32 * j < head_dim) sum = __fmaf_rn(x.v[j], x.v[j], sum);
  for (int offset = 16; offset > 0; offset /= 2) sum = __fadd_rn(sum, __shfl_xor_sync(0xffffffffu, sum, offset));
  const float scale = rsqrtf(__fadd_rn(__fdiv_rn(sum, float(head_dim)), eps));
  __syncwarp();  // buf is free: the warp's previous row is done with it
#pragma unroll
  for (int j = 0; j < max_dim / 32; ++j) {
    const int i = lane + 32 * j;
    if (i < head_dim) buf[i] = __fmul_rn(weight.v[j], __fmul_rn(x.v[j], scale));
  }
  __syncwarp();
  const int half = partial ? rotation.half : head_dim / 2;
#pragma unroll
  for (int j = 0; j < max_dim / 64; ++j) {
    const int i = lane + 32 * j;
    if (i >= half) continue;
    const float a = buf[i], b = buf[i + half], c = rotation.cos[j], s = rotation.sin[j];
    store(i, __float2bfloat16(__fmaf_rn(a, c, -__fmul_rn(b, s))));
    store(i + half, __float2bfloat16(__fmaf_rn(b, c, __fmul_rn(a, s))));
  }
  if constexpr (partial) {
#pragma unroll
    for (int j = 0; j < max_dim / 32; ++j) {  // the rest pass through, normed
      const int i = lane + 32 * j;
      if (i >= 2 * half && i < head_dim) store(i, __float2bfloat16(buf[i]));
    }
  }
}

}  // namespace troupe::cuda
