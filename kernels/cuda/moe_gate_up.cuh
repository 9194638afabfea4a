#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/moe_align.cuh"

namespace troupe::cuda {

// The gate and up projections of a plan's tiles with SwiGLU fused: for every row r of
// every tile (local expert e) with pair p = sorted_pairs[r],
//   act[r, n] = silu(x[p / k] . w13[e, n]) * (x[p / k] . w13[e, inter + n]),  n < inter,
// fp32 dot products and silu, rounded once to bf16. Padding rows (p = -1) get zeros in
// 64-row tiles (prefill); in 16-row tiles (decode, see moe_stream.cuh) they hold finite
// values moe_down ignores, or nothing past row 8 of a tile of at most 8 pairs.
// x [tokens, hidden], w13 [local_experts, 2 * inter, hidden] (gate rows, then up rows),
// act [plan.max_tiles * plan.tile_rows, inter]. plan.tile_rows is 16 or 64; hidden and
// inter are multiples of 16; device pointers 16-byte aligned. moe_down, launched next,
// may start before this kernel ends (programmatic dependent launch).
void moe_gate_up(const __nv_bfloat16* x, int hidden, int k, const __nv_bfloat16* w13, int inter, const moe_plan& plan,
                 __nv_bfloat16* act, cudaStream_t stream);

}  // namespace troupe::cuda
