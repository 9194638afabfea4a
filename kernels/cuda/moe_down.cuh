#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/moe_align.cuh"

namespace troupe::cuda {

// The down projection of a plan's tiles, scaled by the routing weight, into per-pair rows:
// for every row r of every tile (local expert e) with pair p = sorted_pairs[r] >= 0,
//   y[p, n] = weights[p] * (act[r] . w2[e, n]),  n < hidden,
// in fp32. Rows of pairs in no tile (non-local experts) are left as they were. act
// [plan.max_tiles * plan.tile_rows, inter] from moe_gate_up, w2 [local_experts, hidden,
// inter], weights [tokens * k], y [tokens * k, hidden]. plan.tile_rows is 16 or 64; hidden
// and inter are multiples of 16; device pointers 16-byte aligned. Launched as a
// programmatic dependent of the kernel before it on the stream (moe_gate_up): it starts
// streaming w2 early, and waits for that kernel before it reads act, so only act may come
// from it.
void moe_down(const __nv_bfloat16* act, int inter, const __nv_bfloat16* w2, int hidden, const float* weights,
              const moe_plan& plan, float* y, cudaStream_t stream);

}  // namespace troupe::cuda
