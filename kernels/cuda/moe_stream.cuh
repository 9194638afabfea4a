#pragma once
// The main loop of moe_gate_up's and moe_down's decode tiles (16 rows: a few pairs per
// expert, every weight read once). A warp multiplies 16 weight rows by the tile's token
// rows on tensor cores with the weights as the A operand of m16n8k16 and the tokens as
// its 8 columns (one n-tile, or two when the tile has more than 8 pairs). The weights go
// from global memory straight into fragments, `unroll` k-chunks of loads in flight a lane:
// no shared memory and no barrier, so a warp streams as fast as its loads return. The
// token rows are small and every warp of the tile reads them: they come through L1.
//
// The k order: lane (g = lane / 4, t = lane % 4) loads the 8 values at k = 32c + 8t .. +7
// of k-chunk c from its weight rows g and g + 8 and from its token g of each n-tile. The
// first four are mma step 0's logical k 2t, 2t+1, 2t+8, 2t+9, the last four step 1's. A
// dot product may take its k in any order as long as both operands take the same one, so
// each row is read in 64-byte runs of 4 lanes and no lane shuffles anything. A k that is
// 16 past a multiple of 32 ends with a half chunk: 4 values a lane, one mma step. Each
// output is summed in the same order whatever the other columns hold, so a token's bits
// do not depend on the batch around it.
#include <cstdint>

#include <cuda_bf16.h>

#include "kernels/cuda/mma_bf16.cuh"

namespace troupe::cuda::moe_stream {

constexpr int rows = 16;  // the plan's tile height
constexpr int n_tile = 8;
constexpr int unroll = 4;

// A weight load: read once, so kept out of L1 where the token rows live.
__device__ __forceinline__ uint4 load_weights(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Both k-steps of a chunk: lo and hi are the lane's 8 values of rows g and g + 8, x its
// token's.
__device__ __forceinline__ void mma_chunk(float (&c)[4], const uint4& lo, const uint4& hi, const uint4& x) {
  mma(c, lo.x, hi.x, lo.y, hi.y, x.x, x.y);
  mma(c, lo.z, hi.z, lo.w, hi.w, x.z, x.w);
}

// acc[n] += W[rows g, g + 8] X[n-tile n]^T over k (a multiple of 16), for this lane's
// fragment: acc[n][0..1] row g, tokens 2t and 2t + 1 of the n-tile, [2..3] row g + 8.
// w_lo and w_hi are the lane's weight rows g and g + 8, x[n] its token g's row of n-tile n
// (any readable row for a padding token: its column is never stored). The first chunks of
// the weights are requested before wait() returns, the tokens are read after it: only
// they may come from the kernel before.
template <int n_tiles, class Wait>
__device__ __forceinline__ void multiply(const __nv_bfloat16* w_lo, const __nv_bfloat16* w_hi,
                                         const __nv_bfloat16* const (&x)[n_tiles], int k, float (&acc)[n_tiles][4],
                                         Wait wait) {
  const int t = int(threadIdx.x) % 4;
  const uint4* lo_row = reinterpret_cast<const uint4*>(w_lo) + t;
  const uint4* hi_row = reinterpret_cast<const uint4*>(w_hi) + t;
  const uint4* x_row[n_tiles];
#pragma unroll
  for (int n = 0; n < n_tiles; ++n) {
    x_row[n] = reinterpret_cast<const uint4*>(x[n]) + t;
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[n][i] = 0.0f;
  }
  const int chunks = k / 32;  // full chunks; 4 uint4 apart
  uint4 lo[unroll], hi[unroll];
#pragma unroll
  for (int u = 0; u < unroll; ++u)
    if (u < chunks) {
      lo[u] = load_weights(lo_row + 4 * u);
      hi[u] = load_weights(hi_row + 4 * u);
    }
  wait();
  for (int c = 0; c < chunks; c += unroll) {
    uint4 xs[unroll][n_tiles];
#pragma unroll
    for (int u = 0; u < unroll; ++u)
#pragma unroll
      for (int n = 0; n < n_tiles; ++n)
        if (c + u < chunks) xs[u][n] = __ldg(x_row[n] + 4 * (c + u));
#pragma unroll
    for (int u = 0; u < unroll; ++u) {
      if (c + u >= chunks) break;
#pragma unroll
      for (int n = 0; n < n_tiles; ++n) mma_chunk(acc[n], lo[u], hi[u], xs[u][n]);
      if (c + unroll + u < chunks) {
        lo[u] = load_weights(lo_row + 4 * (c + unroll + u));
        hi[u] = load_weights(hi_row + 4 * (c + unroll + u));
      }
    }
  }
  if (k % 32 != 0) {  // the half chunk: lane t's 4 values at k = 32 * chunks + 4t
    const uint2 lo_half = reinterpret_cast<const uint2*>(w_lo)[8 * chunks + t];
    const uint2 hi_half = reinterpret_cast<const uint2*>(w_hi)[8 * chunks + t];
#pragma unroll
    for (int n = 0; n < n_tiles; ++n) {
      const uint2 x_half = reinterpret_cast<const uint2*>(x[n])[8 * chunks + t];
      mma(acc[n], lo_half.x, hi_half.x, lo_half.y, hi_half.y, x_half.x, x_half.y);
    }
  }
}

}  // namespace troupe::cuda::moe_stream
